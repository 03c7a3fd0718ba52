// XNU model: statfs(2) with f_fstypename, fcntl(2) F_PREALLOCATE and F_GETLK,
// flock(2) on one list with record locks, getrlimit(2) under
// kern.maxfilesperproc, malloc_zone_pressure_relief, sysctlbyname(3) and
// libproc, on linux.
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
// process; PROC_PIDLISTFDS, PROC_PIDFDVNODEINFO and PROC_PIDFDVNODEPATHINFO
// answer EPERM for a process of another user (proc_security_policy's CHECK_SAME_USER: the
// caller's uid against the target's). fi_openflags carries FREAD/FWRITE from
// the descriptor's access mode (xnu fill_fileinfo copies the open file's
// fg_flag); vip_path is the path xnu rebuilds for the vnode from its name
// cache (vn_getpath, bsd/vfs/vfs_cache.c build_path: component by component
// from the file up to the root), never the path the file was opened by: a
// file opened through a symlinked directory (as /tmp and /var are on a Mac,
// to /private/tmp and /private/var) reads back by its real path. The model
// reads linux's d_path of the descriptor, which is built the same way (a
// symlink on the way in is not in it). ASSUMED, unverified on a Mac: the path
// of a file unlinked or replaced since it was opened is its last path (as
// F_GETPATH is reported to give); the model strips linux's " (deleted)".
//
// A Mac's processes, which the model gives the caller (the suite runs on a
// machine of a handful of processes, as root):
// - The caller is an ordinary user: root's exemption from the same-user
//   check (PRIV_GLOBAL_PROC_INFO) is not modelled, since the suite runs as
//   root here only for its mounts, and a Mac user runs runwarden as
//   themself.
// - A process's user is the uid that owns its /proc directory, unless its
//   environment carries XNU_MODEL_UID=<uid> (read once per listing of the
//   processes): how a test starts a live process of another user without
//   root.
// - root's daemons, which every Mac runs and which answer EPERM to every
//   other user: XNU_MODEL_DAEMONS (from the caller's environment; default
//   100) more pids in PROC_ALL_PIDS's listing, above linux's pid_max so that
//   none names a process here (kill(2) answers them ESRCH, where a Mac's
//   answer EPERM), each answering EPERM.
//
// kern.maxfilesperproc (sys/sysctl.h, sys/resource.h): the model's value is
// 10240, or XNU_MODEL_MAXFILESPERPROC; when the addon loads, linux's soft
// RLIMIT_NOFILE is capped at it (an open past it fails EMFILE), and the
// model's getrlimit answers the soft limit as it was, uncapped, as darwin's
// does.
//
// open(2) and openat(2) of a socket answer EOPNOTSUPP, as darwin's (fcntl.h).
//
// One list of locks (sys/file.h, xnu bsd/kern/kern_lockf.c): flock asks
// F_GETLK first; F_GETLK reports the first lock that would block the one
// described, a record lock (linux's own F_GETLK: POSIX ones with their pid,
// OFD ones with -1) or else a flock (from linux's lock table, /proc/locks),
// with l_pid -1 for a flock as lf_getlock gives it ("fl->l_pid will be (-1)
// for file locks").
//
// NOT modelled: the PROC_PGRP/TTY/UID/PPID listings (ENOTSUP), other
// flavors (EINVAL), sockets', pipes' and kqueues' own info flavors, fsid,
// vi_type, the birth time, fi_offset and fi_status; the sandbox's refusal of
// one descriptor's info (CONFIG_MACF mac_proc_check_proc_info); firmlinks and
// APFS's case-insensitive names (a path differing from the one given only by
// case or Unicode normalisation).
#define XNU_MODEL_INTERNAL 1
#include <dirent.h>
#include <errno.h>
#include <linux/falloc.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include "include/fcntl.h"
#include "include/libproc.h"
#include "include/malloc/malloc.h"
#include "include/sys/file.h"
#include "include/sys/resource.h"
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

// A number from the environment, or `fallback` when it is unset or not a number >= 0.
long EnvNumber(const char* name, long fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end;
  long n = strtol(v, &end, 10);
  return *end == '\0' && n >= 0 ? n : fallback;
}

// The user the model takes a process to be: XNU_MODEL_UID from its
// environment, else the uid owning its /proc directory.
std::mutex g_owner_mu;
std::map<int, uid_t> g_owner;  // read once per listing (proc_listpids clears it)

uid_t CallerUid() { return static_cast<uid_t>(EnvNumber("XNU_MODEL_UID", static_cast<long>(geteuid()))); }

// The uid owning process `pid`, or an errno value.
int OwnerOf(int pid, uid_t* uid) {
  {
    std::lock_guard<std::mutex> lock(g_owner_mu);
    auto it = g_owner.find(pid);
    if (it != g_owner.end()) {
      *uid = it->second;
      return 0;
    }
  }
  char p[64];
  snprintf(p, sizeof p, "/proc/%d", pid);
  struct stat st;
  if (stat(p, &st) != 0) return ESRCH;
  uid_t owner = st.st_uid;
  snprintf(p, sizeof p, "/proc/%d/environ", pid);
  if (FILE* f = fopen(p, "re")) {
    static const char kMark[] = "XNU_MODEL_UID=";
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
      if (strncmp(buf + i, kMark, sizeof kMark - 1) == 0) {
        owner = static_cast<uid_t>(strtoul(buf + i + sizeof kMark - 1, nullptr, 10));
        break;
      }
    }
    fclose(f);
  }
  std::lock_guard<std::mutex> lock(g_owner_mu);
  g_owner[pid] = owner;
  *uid = owner;
  return 0;
}

// root's daemons: pids past linux's pid_max, so none is a process here.
int DaemonBase() {
  static int base = [] {
    long max = 4194304;
    if (FILE* f = fopen("/proc/sys/kernel/pid_max", "re")) {
      if (fscanf(f, "%ld", &max) != 1) max = 4194304;
      fclose(f);
    }
    return static_cast<int>(max) + 1;
  }();
  return base;
}
int DaemonCount() { return static_cast<int>(EnvNumber("XNU_MODEL_DAEMONS", 100)); }
bool IsDaemon(int pid) { return pid >= DaemonBase() && pid < DaemonBase() + DaemonCount(); }

int MayInspect(int pid) {
  if (IsDaemon(pid)) return EPERM;
  uid_t uid;
  int err = OwnerOf(pid, &uid);
  if (err != 0) return err;
  return uid == CallerUid() ? 0 : EPERM;
}

// What PROC_PIDLISTFDS last read of one process's descriptors, for the
// proc_pidfdinfo calls that follow it on this thread. xnu answers the
// listing from the descriptor table in one call and each proc_pidfdinfo in
// one more (fp_lookup, vn_stat; vn_getpath only for PROC_PIDFDVNODEPATHINFO);
// linux has no call that lists a process's files with their identities, so
// the listing takes, per descriptor, the two lookups relative to
// /proc/<pid>/fd that the model needs (the file's stat, for its type and
// identity; the link's, whose owner bits linux gives from the open file's
// mode), and proc_pidfdinfo answers from them: about one linux call per
// descriptor and flavor, as xnu makes, where reading each descriptor's link
// and stat by its full path for each call would cost several. The path
// (a readlink) is read only for PROC_PIDFDVNODEPATHINFO. NOT modelled: a
// descriptor closed and opened again on another file between the listing
// and a proc_pidfdinfo (microseconds apart) answers the listed file here,
// where xnu answers the new one.
struct Listed {
  struct stat file;
  mode_t link_mode;
};
thread_local int t_listed_pid = 0;
thread_local std::map<int, Listed> t_listed;

// The descriptor's type as PROC_PIDLISTFDS gives it, from the stat of its
// file: sockets, pipes, and linux's anonymous inodes (eventfd, epoll,
// inotify: no file type bits) standing for xnu's kqueues; every other file
// is a vnode (a regular file, a directory, a device).
uint32_t TypeOf(const struct stat& st) {
  if (S_ISSOCK(st.st_mode)) return PROX_FDTYPE_SOCKET;
  if (S_ISFIFO(st.st_mode)) return PROX_FDTYPE_PIPE;
  if ((st.st_mode & S_IFMT) == 0) return PROX_FDTYPE_KQUEUE;
  return PROX_FDTYPE_VNODE;
}

// kern.maxfilesperproc, and linux's soft RLIMIT_NOFILE as it was before the model capped it.
int MaxFilesPerProc() { return static_cast<int>(EnvNumber("XNU_MODEL_MAXFILESPERPROC", 10240)); }
rlim_t g_nofile_soft = RLIM_INFINITY;
rlim_t g_nofile_cap = RLIM_INFINITY;

__attribute__((constructor)) void CapDescriptors() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rlim_t cap = static_cast<rlim_t>(MaxFilesPerProc());
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= cap) return;
  g_nofile_soft = rl.rlim_cur;
  rl.rlim_cur = cap;
  if (setrlimit(RLIMIT_NOFILE, &rl) == 0) g_nofile_cap = cap;
}

// The lock of another owner that would block `want` on the file open as `fd`
// (one list, kern_lockf.c lf_getblock): a record lock first, then a flock.
// Fills `want` as F_GETLK does; 0 or an errno value.
int BlockingLock(int fd, struct flock* want) {
  const short asked = want->l_type;
  struct flock fl = *want;
  if (::fcntl(fd, F_GETLK, &fl) != 0) return errno;
  if (fl.l_type != F_UNLCK) {
    *want = fl;
    return 0;
  }
  want->l_type = F_UNLCK;
  struct stat st;
  if (fstat(fd, &st) != 0) return errno;
  char id[96];
  snprintf(id, sizeof id, "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev), static_cast<unsigned long long>(st.st_ino));
  FILE* f = fopen("/proc/locks", "re");
  if (f == nullptr) return errno;
  char line[256];
  while (fgets(line, sizeof line, f) != nullptr) {
    char kind[16], mode[16], access[16], file[96];
    long pid;
    // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line has "->" after its number.
    if (strstr(line, "->") != nullptr || sscanf(line, "%*d: %15s %15s %15s %ld %95s", kind, mode, access, &pid, file) != 5) continue;
    if (strcmp(kind, "FLOCK") != 0 || strcmp(file, id) != 0) continue;
    bool write = strcmp(access, "WRITE") == 0;
    if (!write && asked != F_WRLCK) continue;  // shared beside shared
    want->l_type = write ? F_WRLCK : F_RDLCK;
    want->l_whence = SEEK_SET;
    want->l_start = 0;
    want->l_len = 0;
    want->l_pid = -1;
    break;
  }
  fclose(f);
  return 0;
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
  if (cmd == F_GETLK) {
    auto* fl = static_cast<struct flock*>(arg);
    if (fl == nullptr) {
      errno = EFAULT;
      return -1;
    }
    int err = BlockingLock(fd, fl);
    if (err != 0) {
      errno = err;
      return -1;
    }
    return 0;
  }
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

extern "C" void xnu_set_errno(int darwin);

namespace {
// open(2) of a socket: darwin's EOPNOTSUPP (102), set in darwin's numbers (errno.cc).
int SocketOpen(int dirfd, const char* path, int flags) {
  struct stat st;
  if (fstatat(dirfd, path, &st, (flags & O_NOFOLLOW) != 0 ? AT_SYMLINK_NOFOLLOW : 0) != 0 || !S_ISSOCK(st.st_mode)) {
    errno = ENXIO;
    return -1;
  }
  xnu_set_errno(102);
  return -1;
}
}  // namespace

extern "C" int xnu_open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = (flags & O_CREAT) != 0 ? static_cast<mode_t>(va_arg(ap, int)) : 0;
  va_end(ap);
  int fd = ::open(path, flags, mode);
  if (fd < 0 && errno == ENXIO) return SocketOpen(AT_FDCWD, path, flags);
  return fd;
}

extern "C" int xnu_openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = (flags & O_CREAT) != 0 ? static_cast<mode_t>(va_arg(ap, int)) : 0;
  va_end(ap);
  int fd = ::openat(dirfd, path, flags, mode);
  if (fd < 0 && errno == ENXIO) return SocketOpen(dirfd, path, flags);
  return fd;
}

extern "C" int xnu_flock(int fd, int operation) {
  if ((operation & (LOCK_SH | LOCK_EX)) != 0) {
    struct flock want = {};
    want.l_type = (operation & LOCK_EX) != 0 ? F_WRLCK : F_RDLCK;
    want.l_whence = SEEK_SET;
    for (;;) {
      struct flock fl = want;
      if (::fcntl(fd, F_GETLK, &fl) != 0) return -1;
      if (fl.l_type == F_UNLCK) break;
      if ((operation & LOCK_NB) != 0) {
        errno = EWOULDBLOCK;
        return -1;
      }
      struct timespec pause = {0, 10 * 1000 * 1000};
      nanosleep(&pause, nullptr);
    }
  }
  return ::flock(fd, operation);
}

extern "C" int xnu_getrlimit(int resource, struct rlimit* rl) {
  if (::getrlimit(static_cast<__rlimit_resource_t>(resource), rl) != 0) return -1;
  if (resource == RLIMIT_NOFILE && g_nofile_cap != RLIM_INFINITY && rl->rlim_cur == g_nofile_cap) rl->rlim_cur = g_nofile_soft;
  return 0;
}

extern "C" int sysctlbyname(const char* name, void* oldp, size_t* oldlenp, void*, size_t) {
  int v;
  if (name != nullptr && strcmp(name, "hw.optional.avx2_0") == 0) {
#if defined(__x86_64__)
    v = __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    v = 0;
#endif
  } else if (name != nullptr && strcmp(name, "kern.maxfilesperproc") == 0) {
    v = MaxFilesPerProc();
  } else {
    errno = ENOENT;
    return -1;
  }
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
  {
    std::lock_guard<std::mutex> lock(g_owner_mu);
    g_owner.clear();
  }
  DIR* d = opendir("/proc");
  if (d == nullptr) return -1;
  int count = 0;
  int cap = buffer == nullptr ? 0 : buffersize / static_cast<int>(sizeof(int));
  for (int i = 0; i < DaemonCount(); i++) {
    if (buffer != nullptr) {
      if (count >= cap) break;
      static_cast<int*>(buffer)[count] = DaemonBase() + i;
    }
    count++;
  }
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
  if (buffer != nullptr) {
    t_listed_pid = pid;
    t_listed.clear();
  }
  while (struct dirent* e = readdir(d)) {
    char* end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end != '\0' || e->d_name[0] == '\0') continue;
    if (buffer != nullptr) {
      if (count >= cap) break;
      Listed l;
      struct stat link;
      // Closed since the directory was read: not listed.
      if (fstatat(dirfd(d), e->d_name, &l.file, 0) != 0 || fstatat(dirfd(d), e->d_name, &link, AT_SYMLINK_NOFOLLOW) != 0) continue;
      l.link_mode = link.st_mode;
      uint32_t type = TypeOf(l.file);
      if (type == PROX_FDTYPE_VNODE) t_listed[static_cast<int>(fd)] = l;
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

namespace {
// The file open as `fd` in `pid` and its link's mode: from the listing when it read that process
// last on this thread, else looked up now. 0 or an errno value (EBADF: gone, or not a vnode).
int DescriptorOf(int pid, int fd, Listed* out) {
  if (pid == t_listed_pid) {
    auto it = t_listed.find(fd);
    if (it != t_listed.end()) {
      *out = it->second;
      return 0;
    }
  }
  char link[64];
  snprintf(link, sizeof link, "/proc/%d/fd/%d", pid, fd);
  struct stat self;
  if (stat(link, &out->file) != 0 || lstat(link, &self) != 0 || TypeOf(out->file) != PROX_FDTYPE_VNODE) return EBADF;
  out->link_mode = self.st_mode;
  return 0;
}

// proc_fileinfo and vnode_info from what DescriptorOf found. fi_openflags: linux gives the /proc
// link the owner bits of the open file's mode (r-x read, -wx write, rwx both).
void FillVnode(const Listed& l, struct proc_fileinfo* pfi, struct vnode_info* vi) {
  const bool r = (l.link_mode & S_IRUSR) != 0, w = (l.link_mode & S_IWUSR) != 0;
  pfi->fi_openflags = (r ? FREAD : 0) | (w ? FWRITE : 0);
  const struct stat& st = l.file;
  struct vinfo_stat& v = vi->vi_stat;
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
}
}  // namespace

extern "C" int proc_pidfdinfo(int pid, int fd, int flavor, void* buffer, int buffersize) {
  const bool with_path = flavor == PROC_PIDFDVNODEPATHINFO;
  const int need = with_path ? static_cast<int>(sizeof(struct vnode_fdinfowithpath)) : static_cast<int>(sizeof(struct vnode_fdinfo));
  if ((flavor != PROC_PIDFDVNODEINFO && !with_path) || buffer == nullptr || buffersize < need) {
    errno = EINVAL;
    return 0;
  }
  int err = MayInspect(pid);
  if (err != 0) {
    errno = err;
    return 0;
  }
  Listed l;
  err = DescriptorOf(pid, fd, &l);
  if (err != 0) {
    errno = err;
    return 0;
  }
  if (!with_path) {
    auto* out = static_cast<struct vnode_fdinfo*>(buffer);
    memset(out, 0, sizeof *out);
    FillVnode(l, &out->pfi, &out->pvi);
    return need;
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
  auto* out = static_cast<struct vnode_fdinfowithpath*>(buffer);
  memset(out, 0, sizeof *out);
  FillVnode(l, &out->pfi, &out->pvip.vip_vi);
  size_t plen = strnlen(target, sizeof out->pvip.vip_path - 1);
  memcpy(out->pvip.vip_path, target, plen);
  out->pvip.vip_path[plen] = '\0';
  return need;
}
