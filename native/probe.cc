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
// O_DIRECTORY|O_NOFOLLOW (linux: O_PATH too; kProbeDirFlags): a run directory
// that is a symlink is refused (ELOOP or ENOTDIR, reported as an FsError
// stage with that errno), and
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
    dirfd = open(dir, kProbeDirFlags);
  } while (dirfd < 0 && errno == EINTR);
  if (dirfd < 0) {
    buf.out[kOutErrno] = errno;
    return kFsError;
  }
  int stage = GatherProbeFactsAt(dirfd, name, list, buf);
  close(dirfd);
  return stage;
}

// The sequence (CONTRACT §4.2 steps 2-5), cheapest first while every gate
// stays in force:
//
// 1. StatEntry (linux: one statx, no open): the entry's type, size, device,
//    inode, whether it is a mount root, and its mount's unique id.
// 2. The filesystem gate. The run directory's fstatfs must name a local type,
//    unless the entry lies on the directory's own mount (no mount root) and
//    that mount was judged local before (LocalMounts: unique ids are never
//    reused and a mount's filesystem never changes, so the memo cannot go
//    stale). An entry that is, or may be, a mount root (one file bind-mounted
//    from a FUSE or NFS filesystem into a local directory) is judged on its
//    own as well (FsTypeOfEntry, linux O_PATH: nothing is opened for I/O).
//    An entry on the directory's mount is on the directory's filesystem, so
//    there one check serves both.
// 3. Not a regular file: answered from step 1, never opened (a FIFO, a
//    socket, a device or a directory is not even opened).
// 4. Open O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC, never O_CREAT. The file
//    opened must be on a filesystem judged local. An entry on the
//    directory's mount is opened only if no mount is crossed (linux openat2
//    RESOLVE_NO_XDEV, atomic; EXDEV: something was mounted there since the
//    look, so it is judged on its own first); the look's type and size then
//    stand, unless the read below disagrees with the size, and then the
//    descriptor's fstat decides. Otherwise (darwin, a kernel without
//    openat2, a mount-root entry) a plain openat, then fstat: same device and
//    inode as the look, or the descriptor's own fstatfs is checked before
//    anything else, and its fstat is what counts.
// 5. pread of up to head_len bytes at offset 0, flock(LOCK_SH|LOCK_NB), and
//    close, which drops a granted shared lock with the descriptor: this
//    descriptor is the only one on its open file (O_CLOEXEC, never dup'ed;
//    a fork by another thread meanwhile would keep a copy until its exec,
//    which can only make a starting leg wait, never a probe answer free).
//    Taking and dropping a shared lock on a file that later turns out to be
//    unmarked is harmless: a pre-flock writer holds no flock to disturb.
//
// Every failure is a stage TypeScript turns into `unknown`.
int GatherProbeFactsAt(int dirfd, const char* name, const LocalTypes& list, const ProbeBuffers& buf) {
  if (!kHasFlock) return kNoFlock;
  double* out = buf.out;

  EntryStat entry;
  const int entry_err = StatEntry(dirfd, name, &entry);
  const bool on_dir_mount = entry_err == 0 && entry.mount_root == 0;
  const bool remembered = on_dir_mount && buf.mounts != nullptr && buf.mounts->Has(entry.mount_id);
  if (!remembered) {
    FsType type;
    int err = FsTypeOfFd(dirfd, &type);
    if (err != 0) {
      out[kOutErrno] = err;
      return kFsError;
    }
    out[kOutFsType] = type.magic;
    if (!IsLocal(type, list)) return kFsNotLocal;
    if (entry_err != 0) {
      out[kOutErrno] = entry_err;
      return kOpenError;
    }
    if (!on_dir_mount) {
      err = FsTypeOfEntry(dirfd, name, &type);
      if (err != 0) {
        out[kOutErrno] = err;
        return kOpenError;
      }
      out[kOutFsType] = type.magic;
      if (!IsLocal(type, list)) return kFsNotLocal;
    } else if (buf.mounts != nullptr) {
      buf.mounts->Add(entry.mount_id);
    }
  }
  if (!S_ISREG(entry.mode)) {
    out[kOutMode] = entry.mode;
    return kNotRegular;
  }

  const int flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC;
  int fd = -1;
  // Where the look found the entry on the directory's mount, open it only if
  // it still is (no mount crossed): then the file opened is on the judged
  // mount by construction, and the look's type and size stand, checked
  // against the read below.
  bool checked = false;
  if (on_dir_mount) {
    int err = OpenOnDirMount(dirfd, name, flags, &fd);
    if (err == EXDEV) {
      // Something was mounted on the entry since the look: judge it on its own, unopened.
      FsType type;
      err = FsTypeOfEntry(dirfd, name, &type);
      if (err != 0) {
        out[kOutErrno] = err;
        return kOpenError;
      }
      out[kOutFsType] = type.magic;
      if (!IsLocal(type, list)) return kFsNotLocal;
    } else if (err != 0 && err != ENOSYS) {
      out[kOutErrno] = err;
      return kOpenError;
    }
    checked = err == 0;
  }
  struct stat st;
  if (!checked) {
    do {
      fd = openat(dirfd, name, flags);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      out[kOutErrno] = errno;
      return kOpenError;
    }
    if (fstat(fd, &st) != 0) {
      out[kOutErrno] = errno;
      close(fd);
      return kOpenError;
    }
    if (st.st_dev != entry.dev || static_cast<uint64_t>(st.st_ino) != entry.ino) {
      FsType type;
      int err = FsTypeOfFd(fd, &type);
      if (err != 0 || !IsLocal(type, list)) {
        out[kOutFsType] = type.magic;
        out[kOutErrno] = err;
        close(fd);
        return err != 0 ? kFsError : kFsNotLocal;
      }
    }
    if (!S_ISREG(st.st_mode)) {
      out[kOutMode] = st.st_mode;
      close(fd);
      return kNotRegular;
    }
  } else {
    st.st_mode = static_cast<mode_t>(entry.mode);
    st.st_size = static_cast<off_t>(entry.size);
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
  // The look's size must agree with what was read (all of a short file, or a
  // full head of a long one); if not, the entry changed since the look, and
  // the open descriptor's own fstat decides type and size.
  const bool agrees = static_cast<size_t>(n) < buf.head_len ? n == st.st_size : st.st_size >= static_cast<off_t>(buf.head_len);
  if (checked && !agrees) {
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
  }
  out[kOutHeadLength] = static_cast<double>(n);
  out[kOutFileSize] = static_cast<double>(st.st_size);
  int r = Flock(fd, LockKind::kShared);
  int stage = r == 0 ? kSharedGranted : r == kContended ? kSharedContended : kSharedError;
  if (stage == kSharedError) out[kOutErrno] = r;
  // Where a record lock can keep a flock out (darwin's one list), whose it is;
  // 0 where it cannot, with no call (linux).
  int holder = 0;
  if (stage == kSharedContended && kOneLockList && RecordLockHolder(fd, LockKind::kShared, &holder) != 0) holder = 0;
  out[kOutRecordLockPid] = holder;
  close(fd);  // drops the shared lock, if granted, with the only descriptor on it
  return stage;
}

}  // namespace rw
