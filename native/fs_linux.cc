// runwarden native, linux: the platform seam (platform.h) for linux.
// Built and tested on every CI run (x86_64; ext4, tmpfs, FUSE).
#include "platform.h"

#include <errno.h>
#include <string.h>
#include <sys/file.h>
#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace rw {

const char* const kPlatformName = "linux";
const bool kHasFlock = true;
const bool kFsTypeIsName = false;

namespace {
void Fill(const struct statfs& sfs, FsType* out) {
  out->magic = static_cast<uint32_t>(sfs.f_type);
  out->name[0] = '\0';
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

// O_PATH: the descriptor names the file without opening it, so nothing
// reaches a FUSE or NFS server's open handler; fstatfs and fstat work on it.
int FsTypeOfEntry(int dirfd, const char* name, FsType* out) {
  int fd;
  do {
    fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
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
