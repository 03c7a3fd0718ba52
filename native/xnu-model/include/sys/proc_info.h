// XNU model: <sys/proc_info.h>, the part libproc's descriptor listing uses.
// Values and layouts copied from xnu bsd/sys/proc_info.h.
#ifndef XNU_MODEL_SYS_PROC_INFO_H_
#define XNU_MODEL_SYS_PROC_INFO_H_

#include <stdint.h>
#include <sys/param.h>
#include <sys/types.h>

#include "mount.h"

#define PROC_ALL_PIDS 1
#define PROC_PGRP_ONLY 2
#define PROC_UID_ONLY 4

// proc_pidinfo flavors
#define PROC_PIDLISTFDS 1
#define PROC_PIDLISTFD_SIZE (sizeof(struct proc_fdinfo))

// proc_pidfdinfo flavors
#define PROC_PIDFDVNODEINFO 1
#define PROC_PIDFDVNODEPATHINFO 2

// proc_fdtype
#define PROX_FDTYPE_ATALK 0
#define PROX_FDTYPE_VNODE 1
#define PROX_FDTYPE_SOCKET 2
#define PROX_FDTYPE_PSHM 3
#define PROX_FDTYPE_PSEM 4
#define PROX_FDTYPE_KQUEUE 5
#define PROX_FDTYPE_PIPE 6
#define PROX_FDTYPE_FSEVENTS 7

// fi_openflags carries the open file's flags as the kernel keeps them
// (sys/fcntl.h: FREAD, FWRITE, ...).
#ifndef FREAD
#define FREAD 0x00000001
#endif
#ifndef FWRITE
#define FWRITE 0x00000002
#endif

struct proc_fdinfo {
  int32_t proc_fd;
  uint32_t proc_fdtype;
};

struct proc_fileinfo {
  uint32_t fi_openflags;
  uint32_t fi_status;
  off_t fi_offset;
  int32_t fi_type;
  uint32_t fi_guardflags;
};

struct vinfo_stat {
  uint32_t vst_dev;
  uint16_t vst_mode;
  uint16_t vst_nlink;
  uint64_t vst_ino;
  uid_t vst_uid;
  gid_t vst_gid;
  int64_t vst_atime;
  int64_t vst_atimensec;
  int64_t vst_mtime;
  int64_t vst_mtimensec;
  int64_t vst_ctime;
  int64_t vst_ctimensec;
  int64_t vst_birthtime;
  int64_t vst_birthtimensec;
  off_t vst_size;
  int64_t vst_blocks;
  int32_t vst_blksize;
  uint32_t vst_flags;
  uint32_t vst_gen;
  uint32_t vst_rdev;
  int64_t vst_qspare[2];
};

struct vnode_info {
  struct vinfo_stat vi_stat;
  int vi_type;
  int vi_pad;
  xnu_fsid_t vi_fsid;
};

struct vnode_fdinfo {
  struct proc_fileinfo pfi;
  struct vnode_info pvi;
};

struct vnode_info_path {
  struct vnode_info vip_vi;
  char vip_path[MAXPATHLEN];
};

struct vnode_fdinfowithpath {
  struct proc_fileinfo pfi;
  struct vnode_info_path pvip;
};

#endif  // XNU_MODEL_SYS_PROC_INFO_H_
