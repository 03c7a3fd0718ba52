// runwarden native, darwin: the platform seam (platform.h) for darwin.
//
// Written against the documented statfs(2) and flock(2) interfaces of darwin.
// Compiled and linked for arm64 and x86-64 macOS on linux with zig (the
// darwin build gate, test/darwin-build.test.ts, and the shipped prebuilds),
// but NEVER RUN: no Mac was available. binding.gyp builds it only when
// OS=="mac". What f_fstypename each filesystem reports: docs/CONTRACT.md §5.6.
#include "platform.h"

#include <errno.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/param.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <malloc/malloc.h>
#include <unistd.h>

namespace rw {

const char* const kPlatformName = "darwin";
const bool kHasFlock = true;
const bool kFsTypeIsName = true;
const int kProbeDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

namespace {
void Fill(const struct statfs& sfs, FsType* out) {
  out->magic = 0;
  // f_fstypename is MFSTYPENAMELEN (16) bytes, NUL-terminated.
  strncpy(out->name, sfs.f_fstypename, sizeof out->name - 1);
  out->name[sizeof out->name - 1] = '\0';
}
}  // namespace

int FsTypeOfPath(const char* path, FsType* out) {
  struct statfs sfs;
  if (statfs(path, &sfs) != 0) return errno;
  Fill(sfs, out);
  return 0;
}

int FsTypeOfFd(int fd, FsType* out) {
  struct statfs sfs;
  if (fstatfs(fd, &sfs) != 0) return errno;
  Fill(sfs, out);
  return 0;
}

// darwin has no O_PATH: the entry is opened read-only and non-blocking (no
// I/O), checked, and closed. Weaker than linux: the filesystem sees an open.
int FsTypeOfEntry(int dirfd, const char* name, FsType* out) {
  int fd;
  do {
    fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  struct statfs sfs;
  int err = fstatfs(fd, &sfs) != 0 ? errno : 0;
  close(fd);
  if (err != 0) return err;
  Fill(sfs, out);
  return 0;
}

// fstatat without following a link. darwin has no mount-root attribute and
// no unique mount id here, so the probe takes its slower path: the entry's
// own filesystem is judged every time (FsTypeOfEntry).
int StatEntry(int dirfd, const char* name, EntryStat* out) {
  struct stat st;
  int r;
  do {
    r = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
  } while (r != 0 && errno == EINTR);
  if (r != 0) return errno;
  out->dev = st.st_dev;
  out->ino = static_cast<uint64_t>(st.st_ino);
  out->mode = static_cast<uint32_t>(st.st_mode);
  out->size = static_cast<uint64_t>(st.st_size);
  out->mount_root = -1;
  out->mount_id = 0;
  return 0;
}

// darwin has no way to refuse a mount crossing in one open: the probe opens
// plainly and checks the descriptor.
int OpenOnDirMount(int, const char*, int, int*) { return ENOSYS; }

int Flock(int fd, LockKind kind) {
  int how = kind == LockKind::kShared ? (LOCK_SH | LOCK_NB) : kind == LockKind::kExclusive ? (LOCK_EX | LOCK_NB) : LOCK_UN;
  int r;
  do {
    r = flock(fd, how);
  } while (r != 0 && errno == EINTR);
  if (r == 0) return 0;
  if (errno == EWOULDBLOCK || errno == EAGAIN) return kContended;
  return errno;
}

// malloc_zone_pressure_relief(NULL, 0): every zone, as much as it can; returns the bytes released.
bool ReleaseFreeMemory() { return malloc_zone_pressure_relief(nullptr, 0) > 0; }

}  // namespace rw
