// XNU model: <sys/mount.h>, statfs(2) and fstatfs(2) with darwin's struct
// statfs (64-bit inode layout, xnu bsd/sys/mount.h): the filesystem is named
// by f_fstypename (MFSTYPENAMELEN bytes, NUL-terminated), not by a magic
// number. statfs(2): "f_fstypename: fs type name". The names the model gives
// linux filesystems: native/xnu-model/sys.cc.
#ifndef XNU_MODEL_SYS_MOUNT_H_
#define XNU_MODEL_SYS_MOUNT_H_

#include <stdint.h>
#include <sys/param.h>
#include <sys/types.h>

#define MFSTYPENAMELEN 16
#define MNAMELEN 1024

typedef struct xnu_fsid {
  int32_t val[2];
} xnu_fsid_t;

// darwin's names, renamed for the model so glibc's own struct statfs is never redefined.
#define statfs xnu_statfs
#define fstatfs xnu_fstatfs

struct xnu_statfs {
  uint32_t f_bsize;
  int32_t f_iosize;
  uint64_t f_blocks;
  uint64_t f_bfree;
  uint64_t f_bavail;
  uint64_t f_files;
  uint64_t f_ffree;
  xnu_fsid_t f_fsid;
  uid_t f_owner;
  uint32_t f_type;
  uint32_t f_flags;
  uint32_t f_fssubtype;
  char f_fstypename[MFSTYPENAMELEN];
  char f_mntonname[MNAMELEN];
  char f_mntfromname[MNAMELEN];
  uint32_t f_flags_ext;
  uint32_t f_reserved[7];
};

#ifdef __cplusplus
extern "C" {
#endif
int xnu_statfs(const char* path, struct xnu_statfs* buf);
int xnu_fstatfs(int fd, struct xnu_statfs* buf);
#ifdef __cplusplus
}
#endif

#endif  // XNU_MODEL_SYS_MOUNT_H_
