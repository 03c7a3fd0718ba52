// runwarden native: gathering a probe's facts (CONTRACT §4.2 steps 2-5).
//
// Plain POSIX plus the platform seam; no N-API here. The caller (addon.cc)
// hands in the buffers registered once by probeSetup() and turns the
// returned Stage into a JS number. What the facts mean is decided in
// src/lock/probe.ts; the one comparison made here is the filesystem gate,
// because the lock file must not even be opened on a filesystem that is not
// known to be local, and checking it here saves a crossing.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "facts.h"
#include "platform.h"

namespace rw {

bool IsLocal(const FsType& type, const LocalTypes& list) {
  if (kFsTypeIsName) {
    for (const auto& name : list.names) {
      if (name == type.name) return true;
    }
    return false;
  }
  for (uint32_t magic : list.magics) {
    if (magic == type.magic) return true;
  }
  return false;
}

namespace {

// The directory part of a POSIX path, as path.dirname() names it (the same
// directory; "a//b" gives "a" where node gives "a/"): trailing slashes and
// the last component dropped, "." for a bare name, "/" for the root.
void DirName(const char* path, char (&dir)[PATH_MAX + 1]) {
  size_t len = strlen(path);
  memcpy(dir, path, len + 1);
  size_t i = len;
  while (i > 1 && dir[i - 1] == '/') i--;  // trailing slashes
  while (i > 0 && dir[i - 1] != '/') i--;  // last component
  while (i > 1 && dir[i - 1] == '/') i--;  // slashes before it
  if (i == 0) {
    dir[0] = '.';
    dir[1] = '\0';
  } else {
    dir[i] = '\0';
  }
}

}  // namespace

// The lock file's directory (the run directory) is opened once, with
// O_DIRECTORY|O_NOFOLLOW: a run directory that is a symlink is refused
// (ELOOP or ENOTDIR, reported as an FsError stage with that errno), and
// everything after is relative to that descriptor, so a rename or a swap of
// the directory meanwhile cannot send the probe anywhere else.
int GatherProbeFacts(const char* lock_path, const LocalTypes& list, const ProbeBuffers& buf) {
  if (!kHasFlock) return kNoFlock;
  char dir[PATH_MAX + 1];
  DirName(lock_path, dir);
  const char* name = strrchr(lock_path, '/');
  name = name == nullptr ? lock_path : name + 1;
  int dirfd;
  do {
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  } while (dirfd < 0 && errno == EINTR);
  if (dirfd < 0) {
    buf.out[kOutErrno] = errno;
    return kFsError;
  }
  int stage = GatherProbeFactsAt(dirfd, name, list, buf);
  close(dirfd);
  return stage;
}

// The filesystem gate, twice before any flock: fstatfs of the directory, then
// of the entry itself (FsTypeOfEntry: on linux an O_PATH descriptor, so the
// file is not opened for I/O), because one file can be bind-mounted from
// another filesystem into a local directory. Only if both are local:
// openat(O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC) (never O_CREAT), fstatfs of
// that open descriptor (the file opened is the file gated, even if the entry
// was replaced in between), fstat, pread of up to head_len bytes at offset 0,
// then flock(LOCK_SH|LOCK_NB), LOCK_UN at once if granted, and close. Taking
// and dropping a shared lock on a file that later turns out to be unmarked is
// harmless: a pre-flock writer holds no flock for it to disturb.
int GatherProbeFactsAt(int dirfd, const char* name, const LocalTypes& list, const ProbeBuffers& buf) {
  if (!kHasFlock) return kNoFlock;
  double* out = buf.out;

  FsType type;
  int err = FsTypeOfFd(dirfd, &type);
  if (err != 0) {
    out[kOutErrno] = err;
    return kFsError;
  }
  out[kOutFsType] = type.magic;
  if (!IsLocal(type, list)) return kFsNotLocal;
  err = FsTypeOfEntry(dirfd, name, &type);
  if (err != 0) {
    out[kOutErrno] = err;
    return kOpenError;
  }
  out[kOutFsType] = type.magic;
  if (!IsLocal(type, list)) return kFsNotLocal;

  int fd;
  do {
    fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    out[kOutErrno] = errno;
    return kOpenError;
  }
  err = FsTypeOfFd(fd, &type);
  if (err != 0 || !IsLocal(type, list)) {
    out[kOutFsType] = type.magic;
    out[kOutErrno] = err;
    close(fd);
    return err != 0 ? kFsError : kFsNotLocal;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    out[kOutErrno] = errno;
    close(fd);
    return kOpenError;
  }
  if (!S_ISREG(st.st_mode)) {
    out[kOutMode] = st.st_mode;
    close(fd);
    return kNotRegular;
  }
  ssize_t n;
  do {
    n = pread(fd, buf.head, buf.head_len, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    out[kOutErrno] = errno;
    close(fd);
    return kReadError;
  }
  out[kOutHeadLength] = static_cast<double>(n);
  out[kOutFileSize] = static_cast<double>(st.st_size);
  int r = Flock(fd, LockKind::kShared);
  int stage;
  if (r == 0) {
    Flock(fd, LockKind::kUnlock);  // close() below releases it regardless
    stage = kSharedGranted;
  } else if (r == kContended) {
    stage = kSharedContended;
  } else {
    out[kOutErrno] = r;
    stage = kSharedError;
  }
  close(fd);
  return stage;
}

}  // namespace rw
