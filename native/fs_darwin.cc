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
#include <fcntl.h>
#include <unistd.h>

namespace rw {

const char* const kPlatformName = "darwin";
const bool kHasFlock = true;
const bool kFsTypeIsName = true;

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

}  // namespace rw
