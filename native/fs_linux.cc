// runwarden native, linux: the platform seam (platform.h) for linux.
// Built and tested on every CI run (x86_64; ext4, tmpfs, FUSE).
#include "platform.h"

#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string.h>
#include <sys/file.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

// A C library without statx(2) (musl before 1.2.5): the kernel's struct and
// flags from its uapi header, and the system call itself (linux >= 4.11).
#if !defined(STATX_TYPE)
#include <linux/stat.h>
#ifndef AT_STATX_SYNC_AS_STAT
#define AT_STATX_SYNC_AS_STAT 0x0000
#endif
static inline int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* buf) {
  return static_cast<int>(syscall(SYS_statx, dirfd, path, flags, mask, buf));
}
#endif

namespace rw {

const char* const kPlatformName = "linux";
const char* const kLockPrimitive = "flock";
const bool kHasFlock = true;
const bool kFsTypeIsName = false;
// O_PATH descriptors serve as openat/statx dirfds and for fstatfs (linux >= 3.12).
const int kProbeDirFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

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

namespace {
// Defined here because the C library's headers may predate them; the values
// are the kernel's ABI (include/uapi/linux/stat.h). A kernel that does not
// know a request bit ignores it and leaves it out of stx_mask, and one that
// cannot tell an attribute leaves it out of stx_attributes_mask, so both are
// checked before being believed.
constexpr unsigned kStatxMntIdUnique = 0x4000u;    // STATX_MNT_ID_UNIQUE, linux 6.8
constexpr uint64_t kStatxAttrMountRoot = 0x2000u;  // STATX_ATTR_MOUNT_ROOT, linux 5.8
// stx_mnt_id sits at byte 0x90 of struct statx (a padding word in C libraries
// older than the field); read it by offset so either declaration works.
constexpr size_t kStxMntIdOffset = 0x90;
static_assert(sizeof(struct statx) >= kStxMntIdOffset + sizeof(uint64_t), "struct statx too small");
}  // namespace

// One statx: type, size, device and inode for the open-time identity check,
// whether the entry is a mount root, and the never-reused id of its mount.
// statx does not open the file, so a FUSE or NFS server sees a getattr at
// most, never an open.
int StatEntry(int dirfd, const char* name, EntryStat* out) {
  struct statx stx;
  const unsigned mask = STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | kStatxMntIdUnique;
  int r;
  do {
    r = statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, mask, &stx);
  } while (r != 0 && errno == EINTR);
  if (r != 0) return errno;
  if ((stx.stx_mask & (STATX_TYPE | STATX_INO)) != (STATX_TYPE | STATX_INO)) return EIO;
  out->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  out->ino = stx.stx_ino;
  out->mode = stx.stx_mode;
  out->size = stx.stx_size;
  out->mount_root = (stx.stx_attributes_mask & kStatxAttrMountRoot) == 0 ? -1 : (stx.stx_attributes & kStatxAttrMountRoot) != 0 ? 1 : 0;
  out->mount_id = 0;
  if ((stx.stx_mask & kStatxMntIdUnique) != 0) {
    memcpy(&out->mount_id, reinterpret_cast<const char*>(&stx) + kStxMntIdOffset, sizeof out->mount_id);
  }
  return 0;
}

namespace {
// openat2(2)'s argument and flag, as the kernel's ABI defines them
// (include/uapi/linux/openat2.h), for C libraries whose headers predate them.
struct OpenHow {
  uint64_t flags;
  uint64_t mode;
  uint64_t resolve;
};
constexpr uint64_t kResolveNoXdev = 0x01;
#ifdef SYS_openat2
constexpr long kSysOpenat2 = SYS_openat2;
#else
constexpr long kSysOpenat2 = 437;  // the same number on every architecture
#endif
}  // namespace

// linux >= 5.6. A kernel without openat2 answers ENOSYS; a seccomp filter
// that does not know it may answer EPERM, which is read as "cannot" too (the
// plain open that follows reports a real EPERM again).
int OpenOnDirMount(int dirfd, const char* name, int flags, int* fd) {
  OpenHow how = {static_cast<uint64_t>(flags), 0, kResolveNoXdev};
  long r;
  do {
    r = syscall(kSysOpenat2, dirfd, name, &how, sizeof how);
  } while (r < 0 && errno == EINTR);
  if (r >= 0) {
    *fd = static_cast<int>(r);
    return 0;
  }
  return errno == EPERM ? ENOSYS : errno;
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

bool ReleaseFreeMemory() {
#if defined(__GLIBC__)
  return malloc_trim(0) == 1;
#else
  return false;  // musl has no malloc_trim
#endif
}

const bool kHasProcFs = true;
const char* const kHolderTable = "proc-locks";
const bool kOneLockList = false;

// The census is read from /proc by TypeScript (src/kernel/holders.ts).
int OpenFilesOnDevice(uint64_t, int, const OpenFileQuery&, std::vector<OpenFile>*, std::vector<int>*) { return ENOSYS; }

int RecordLockHolder(int, LockKind, int* pid) {
  *pid = 0;
  return 0;
}

int MaxFilesPerProcess(int64_t*) { return ENOSYS; }

}  // namespace rw
