// XNU model: statfs(2) with f_fstypename, fcntl(2) F_PREALLOCATE,
// malloc_zone_pressure_relief, sysctlbyname(3) and libproc, on linux.
//
// No /proc is exposed: the model uses linux's /proc internally, to answer
// libproc's questions, and nothing of it reaches the addon's callers except
// through libproc's own answers.
//
// statfs(2): "f_fstypename: fs type name". Darwin names for linux's
// filesystems: the ones a Mac's own disk would carry (ext2/3/4, xfs, btrfs,
// tmpfs, overlayfs, f2fs, zfs, ramfs) read "apfs"; NFS "nfs"; SMB/CIFS
// "smbfs"; FUSE "macfuse"; FAT "msdos"; exFAT "exfat"; HFS "hfs"; any other
// "linux-<f_type in hex>" (so a filesystem the model has no darwin name for is
// never taken for a local one).
//
// libproc (libproc.h, xnu bsd/kern/proc_info.c): PROC_ALL_PIDS lists every
// process; PROC_PIDLISTFDS and PROC_PIDFDVNODEPATHINFO answer only for a
// process of the caller's own user unless the caller is root (EPERM
// otherwise, xnu's same-user check for these flavors). fi_openflags carries
// FREAD/FWRITE from the descriptor's access mode (xnu fill_fileinfo copies
// the open file's fg_flag); vip_path is the path the descriptor was opened
// by. ASSUMED, unverified on a Mac: the path of a file unlinked or replaced
// since it was opened is its last path (as F_GETPATH is reported to give);
// the model strips linux's " (deleted)".
//
// NOT modelled: the PROC_PGRP/TTY/UID/PPID listings (ENOTSUP), other
// flavors (EINVAL), sockets', pipes' and kqueues' own info flavors, fsid,
// vi_type, the birth time, fi_offset and fi_status.
#define XNU_MODEL_INTERNAL 1
#include <dirent.h>
#include <errno.h>
#include <linux/falloc.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "include/fcntl.h"
#include "include/libproc.h"
#include "include/malloc/malloc.h"
#include "include/sys/sysctl.h"

#undef statfs
#undef fstatfs

namespace {

const char* NameOf(unsigned long magic) {
  switch (magic) {
    case 0xEF53: case 0x58465342: case 0x9123683E: case 0x01021994: case 0x794C7630: case 0xF2F52010: case 0x2FC12FC1: case 0x858458F6:
      return "apfs";
    case 0x6969: return "nfs";
    case 0x517B: case 0xFF534D42: case 0xFE534D42: return "smbfs";
    case 0x65735546: return "macfuse";
    case 0x4D44: return "msdos";
    case 0x2011BAB0: return "exfat";
    case 0x4244: return "hfs";
    default: return nullptr;
  }
}

void Fill(const struct ::statfs& l, struct xnu_statfs* out) {
  memset(out, 0, sizeof *out);
  out->f_bsize = static_cast<uint32_t>(l.f_bsize);
  out->f_iosize = static_cast<int32_t>(l.f_bsize);
  out->f_blocks = l.f_blocks;
  out->f_bfree = l.f_bfree;
  out->f_bavail = l.f_bavail;
  out->f_files = l.f_files;
  out->f_ffree = l.f_ffree;
  memcpy(&out->f_fsid, &l.f_fsid, sizeof out->f_fsid);
  unsigned long magic = static_cast<unsigned long>(l.f_type) & 0xffffffffUL;
  const char* name = NameOf(magic);
  if (name != nullptr) snprintf(out->f_fstypename, sizeof out->f_fstypename, "%s", name);
  else snprintf(out->f_fstypename, sizeof out->f_fstypename, "linux-%lx", magic);
}

// The uid owning process `pid` (its /proc directory's), or an errno value.
int OwnerOf(int pid, uid_t* uid) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d", pid);
  struct stat st;
  if (stat(p, &st) != 0) return ESRCH;
  *uid = st.st_uid;
  return 0;
}

int MayInspect(int pid) {
  uid_t uid;
  int err = OwnerOf(pid, &uid);
  if (err != 0) return err;
  uid_t me = geteuid();
  return me == 0 || me == uid ? 0 : EPERM;
}

}  // namespace

extern "C" int xnu_statfs(const char* path, struct xnu_statfs* buf) {
  struct ::statfs l;
  if (::statfs(path, &l) != 0) return -1;
  Fill(l, buf);
  return 0;
}

extern "C" int xnu_fstatfs(int fd, struct xnu_statfs* buf) {
  struct ::statfs l;
  if (::fstatfs(fd, &l) != 0) return -1;
  Fill(l, buf);
  return 0;
}

extern "C" int xnu_fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (cmd != F_PREALLOCATE) return ::fcntl(fd, cmd, arg);
  auto* store = static_cast<fstore_t*>(arg);
  if (store == nullptr || store->fst_length < 0 || (store->fst_posmode != F_PEOFPOSMODE && store->fst_posmode != F_VOLPOSMODE)) {
    errno = EINVAL;
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return -1;
  off_t from = store->fst_posmode == F_PEOFPOSMODE ? static_cast<off_t>(st.st_blocks) * 512 + store->fst_offset : store->fst_offset;
  if (fallocate(fd, FALLOC_FL_KEEP_SIZE, from, store->fst_length) != 0) {
    if (errno == EOPNOTSUPP) errno = ENOTSUP;
    store->fst_bytesalloc = 0;
    return -1;
  }
  store->fst_bytesalloc = store->fst_length;
  return 0;
}

extern "C" size_t malloc_zone_pressure_relief(malloc_zone_t*, size_t) { return malloc_trim(0) ? 1 : 0; }

extern "C" int sysctlbyname(const char* name, void* oldp, size_t* oldlenp, void*, size_t) {
  if (name == nullptr || strcmp(name, "hw.optional.avx2_0") != 0) {
    errno = ENOENT;
    return -1;
  }
#if defined(__x86_64__)
  int v = __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  int v = 0;
#endif
  if (oldp == nullptr || oldlenp == nullptr || *oldlenp < sizeof v) {
    errno = ENOMEM;
    return -1;
  }
  memcpy(oldp, &v, sizeof v);
  *oldlenp = sizeof v;
  return 0;
}

extern "C" int proc_listpids(uint32_t type, uint32_t, void* buffer, int buffersize) {
  if (type != PROC_ALL_PIDS) {
    errno = ENOTSUP;
    return -1;
  }
  DIR* d = opendir("/proc");
  if (d == nullptr) return -1;
  int count = 0;
  int cap = buffer == nullptr ? 0 : buffersize / static_cast<int>(sizeof(int));
  while (struct dirent* e = readdir(d)) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    if (buffer != nullptr) {
      if (count >= cap) break;
      static_cast<int*>(buffer)[count] = static_cast<int>(pid);
    }
    count++;
  }
  closedir(d);
  // With no buffer: the bytes needed, with room for processes started since.
  if (buffer == nullptr) return (count + 64) * static_cast<int>(sizeof(int));
  return count * static_cast<int>(sizeof(int));
}

extern "C" int proc_pidinfo(int pid, int flavor, uint64_t, void* buffer, int buffersize) {
  if (flavor != PROC_PIDLISTFDS) {
    errno = EINVAL;
    return 0;
  }
  int err = MayInspect(pid);
  if (err != 0) {
    errno = err;
    return 0;
  }
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/fd", pid);
  DIR* d = opendir(p);
  if (d == nullptr) {
    errno = errno == ENOENT ? ESRCH : errno;
    return 0;
  }
  int count = 0;
  int cap = buffer == nullptr ? 0 : buffersize / static_cast<int>(sizeof(struct proc_fdinfo));
  while (struct dirent* e = readdir(d)) {
    char* end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end != '\0' || e->d_name[0] == '\0') continue;
    if (buffer != nullptr) {
      if (count >= cap) break;
      char link[64], target[PATH_MAX + 1];
      snprintf(link, sizeof link, "/proc/%d/fd/%ld", pid, fd);
      ssize_t n = readlink(link, target, PATH_MAX);
      uint32_t type = PROX_FDTYPE_ATALK;
      if (n > 0) {
        target[n] = '\0';
        if (target[0] == '/') type = PROX_FDTYPE_VNODE;
        else if (strncmp(target, "socket:", 7) == 0) type = PROX_FDTYPE_SOCKET;
        else if (strncmp(target, "pipe:", 5) == 0) type = PROX_FDTYPE_PIPE;
        else type = PROX_FDTYPE_KQUEUE;
      }
      auto* out = static_cast<struct proc_fdinfo*>(buffer) + count;
      out->proc_fd = static_cast<int32_t>(fd);
      out->proc_fdtype = type;
    }
    count++;
  }
  closedir(d);
  if (buffer == nullptr) return (count + 32) * static_cast<int>(sizeof(struct proc_fdinfo));
  return count * static_cast<int>(sizeof(struct proc_fdinfo));
}

extern "C" int proc_pidfdinfo(int pid, int fd, int flavor, void* buffer, int buffersize) {
  if (flavor != PROC_PIDFDVNODEPATHINFO || buffer == nullptr || buffersize < static_cast<int>(sizeof(struct vnode_fdinfowithpath))) {
    errno = EINVAL;
    return 0;
  }
  int err = MayInspect(pid);
  if (err != 0) {
    errno = err;
    return 0;
  }
  char link[64], target[PATH_MAX + 1];
  snprintf(link, sizeof link, "/proc/%d/fd/%d", pid, fd);
  ssize_t n = readlink(link, target, PATH_MAX);
  if (n <= 0 || target[0] != '/') {
    errno = EBADF;
    return 0;
  }
  target[n] = '\0';
  static const char kDeleted[] = " (deleted)";
  size_t len = static_cast<size_t>(n);
  if (len > sizeof kDeleted - 1 && strcmp(target + len - (sizeof kDeleted - 1), kDeleted) == 0) target[len - (sizeof kDeleted - 1)] = '\0';
  struct stat st;
  if (stat(link, &st) != 0) {
    errno = EBADF;
    return 0;
  }
  char info[64];
  snprintf(info, sizeof info, "/proc/%d/fdinfo/%d", pid, fd);
  unsigned long flags = 0;
  if (FILE* f = fopen(info, "re")) {
    char line[256];
    while (fgets(line, sizeof line, f) != nullptr) {
      if (sscanf(line, "flags: %lo", &flags) == 1) break;
    }
    fclose(f);
  } else {
    errno = EBADF;
    return 0;
  }
  auto* out = static_cast<struct vnode_fdinfowithpath*>(buffer);
  memset(out, 0, sizeof *out);
  unsigned long acc = flags & O_ACCMODE;
  out->pfi.fi_openflags = (acc == O_RDONLY ? FREAD : acc == O_WRONLY ? FWRITE : FREAD | FWRITE);
  struct vinfo_stat& v = out->pvip.vip_vi.vi_stat;
  v.vst_dev = static_cast<uint32_t>(st.st_dev);
  v.vst_mode = static_cast<uint16_t>(st.st_mode);
  v.vst_nlink = static_cast<uint16_t>(st.st_nlink);
  v.vst_ino = st.st_ino;
  v.vst_uid = st.st_uid;
  v.vst_gid = st.st_gid;
  v.vst_size = st.st_size;
  v.vst_blocks = st.st_blocks;
  v.vst_blksize = static_cast<int32_t>(st.st_blksize);
  v.vst_mtime = st.st_mtim.tv_sec;
  v.vst_mtimensec = st.st_mtim.tv_nsec;
  size_t plen = strnlen(target, sizeof out->pvip.vip_path - 1);
  memcpy(out->pvip.vip_path, target, plen);
  out->pvip.vip_path[plen] = '\0';
  return static_cast<int>(sizeof *out);
}
