// runwarden native, darwin: the platform seam (platform.h) for darwin.
//
// Written against darwin's statfs(2), flock(2), open(2), mount(2) and
// libproc (libproc.h, sys/proc_info.h). Compiled and linked for arm64 and
// x86-64 macOS on linux with zig (the darwin build gate,
// test/darwin-build.test.ts, and the shipped prebuilds), and run on linux
// against the XNU model (native/xnu-model/, scripts/darwin-model.mjs); never
// run on a Mac. binding.gyp builds it only when OS=="mac". What
// f_fstypename each filesystem reports: docs/CONTRACT.md §5.6.
#include "platform.h"

#include <errno.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/param.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <libproc.h>
#include <malloc/malloc.h>
#include <sys/proc_info.h>
#include <sys/sysctl.h>
#include <unistd.h>

namespace rw {

const char* const kPlatformName = "darwin";
const char* const kLockPrimitive = "flock";
const bool kHasFlock = true;
const bool kFsTypeIsName = true;
const int kProbeDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
const bool kHasProcFs = false;
const char* const kHolderTable = "libproc";
const bool kOneLockList = true;

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

// darwin mounts a filesystem only on a directory (mount(2): "dir" is "the
// directory on which the file system is mounted"; ENOTDIR otherwise), so an
// entry that is not a directory is on its directory's filesystem, and is
// never opened here: a FIFO, a socket or a device node at a lock file's path
// is answered from the look (fstatat), as linux answers it from an O_PATH
// descriptor. A directory is opened (darwin has no O_PATH) read-only,
// non-blocking, O_DIRECTORY|O_NOFOLLOW, checked and closed.
int FsTypeOfEntry(int dirfd, const char* name, FsType* out) {
  struct stat st;
  int r;
  do {
    r = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
  } while (r != 0 && errno == EINTR);
  if (r != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return FsTypeOfFd(dirfd, out);
  int fd;
  do {
    fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
// no unique mount id here: a directory may be a mount point (unknown, -1,
// so its own filesystem is judged, FsTypeOfEntry); anything else is on its
// directory's mount (0: mount(2) mounts only on directories).
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
  out->mount_root = S_ISDIR(st.st_mode) ? -1 : 0;
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

// fcntl(2) F_GETLK over the whole file for the lock flock would take: xnu
// keeps flock(2) and record locks on one list per vnode and lf_getblock
// (bsd/kern/kern_lockf.c) does not tell them apart, so a third party's
// fcntl(F_SETLK) or lockf(3) lock keeps every flock out; lf_getlock answers
// the blocking lock's holder in l_pid for a record lock, and -1 for a flock
// ("fl->l_pid will be (-1) for file locks") or an OFD lock.
int RecordLockHolder(int fd, LockKind kind, int* pid) {
  *pid = 0;
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = kind == LockKind::kExclusive ? F_WRLCK : F_RDLCK;
  fl.l_whence = SEEK_SET;
  int r;
  do {
    r = fcntl(fd, F_GETLK, &fl);
  } while (r != 0 && errno == EINTR);
  if (r != 0) return errno;
  if (fl.l_type != F_UNLCK && fl.l_pid > 0) *pid = fl.l_pid;
  return 0;
}

// sysctl kern.maxfilesperproc (xnu bsd/kern/kern_resource.c: the kernel
// enforces MIN(RLIMIT_NOFILE, maxfilesperproc), while getrlimit(2) answers
// the soft limit as set).
int MaxFilesPerProcess(int64_t* out) {
  int v = 0;
  size_t len = sizeof v;
  if (sysctlbyname("kern.maxfilesperproc", &v, &len, nullptr, 0) != 0) return errno;
  *out = v;
  return 0;
}

// malloc_zone_pressure_relief(NULL, 0): every zone, as much as it can; returns the bytes released.
bool ReleaseFreeMemory() { return malloc_zone_pressure_relief(nullptr, 0) > 0; }

// The census linux reads from /proc/<pid>/fd, from libproc (libproc.h):
// proc_listpids(PROC_ALL_PIDS) lists the processes; for each,
// proc_pidinfo(PROC_PIDLISTFDS) its descriptors (struct proc_fdinfo), and
// for each vnode among them proc_pidfdinfo(PROC_PIDFDVNODEINFO) the file's
// device and inode (vinfo_stat) and the open file's flags (fi_openflags:
// FREAD/FWRITE). Only for a descriptor `query` keeps by those, and only
// when it asks for a name, proc_pidfdinfo(PROC_PIDFDVNODEPATHINFO) the path
// (xnu vn_getpath, the costlier flavor), whose last component is compared
// here. What is not kept never leaves this call. Only processes of this
// user answer unless this one is root (EPERM, proc_security_policy's
// same-user check), and the sandbox may refuse one descriptor's info
// (EPERM, mac_proc_check_proc_info): each such process is listed in
// *unreadable, once. A process or descriptor gone between the calls is
// passed over.
int OpenFilesOnDevice(uint64_t dev, int except_pid, const OpenFileQuery& query, std::vector<OpenFile>* out, std::vector<int>* unreadable) {
  unreadable->clear();
  errno = 0;
  int bytes = proc_listpids(PROC_ALL_PIDS, 0, nullptr, 0);
  if (bytes <= 0) return errno != 0 ? errno : EIO;
  std::vector<int> pids(static_cast<size_t>(bytes) / sizeof(int) + 64);
  errno = 0;
  bytes = proc_listpids(PROC_ALL_PIDS, 0, pids.data(), static_cast<int>(pids.size() * sizeof(int)));
  if (bytes <= 0) return errno != 0 ? errno : EIO;
  pids.resize(static_cast<size_t>(bytes) / sizeof(int));
  // The listing's size first: xnu proc_pidfdlist fills a short buffer from the descriptor table's
  // first slots only, so a short buffer would miss high descriptors without saying so. With no
  // buffer it answers the table's size (fd_nfiles) and 20 more.
  std::vector<struct proc_fdinfo> fds;
  struct vnode_fdinfo vi;
  struct vnode_fdinfowithpath vp;
  const size_t name_len = query.name.size();
  for (int pid : pids) {
    if (pid <= 0 || pid == except_pid) continue;
    errno = 0;
    int need = proc_pidinfo(pid, PROC_PIDLISTFDS, 0, nullptr, 0);
    if (need <= 0) {
      if (errno == EPERM || errno == EACCES) unreadable->push_back(pid);
      continue;
    }
    size_t slots = static_cast<size_t>(need) / sizeof(struct proc_fdinfo) + 16;
    if (fds.size() < slots) fds.resize(slots);
    errno = 0;
    int got = proc_pidinfo(pid, PROC_PIDLISTFDS, 0, fds.data(), static_cast<int>(slots * sizeof(struct proc_fdinfo)));
    if (got <= 0) {
      if (errno == EPERM || errno == EACCES) unreadable->push_back(pid);
      continue;
    }
    size_t count = static_cast<size_t>(got) / sizeof(struct proc_fdinfo);
    bool hidden = false;
    for (size_t i = 0; i < count; i++) {
      if (fds[i].proc_fdtype != PROX_FDTYPE_VNODE) continue;
      errno = 0;
      int r = proc_pidfdinfo(pid, fds[i].proc_fd, PROC_PIDFDVNODEINFO, &vi, static_cast<int>(sizeof vi));
      if (r < static_cast<int>(sizeof vi)) {
        if (!hidden && (errno == EPERM || errno == EACCES)) {
          hidden = true;
          unreadable->push_back(pid);
        }
        continue;
      }
      const struct vinfo_stat& v = vi.pvi.vi_stat;
      if (v.vst_dev != static_cast<uint32_t>(dev)) continue;
      if (query.ino != 0 && v.vst_ino != query.ino) continue;
      const bool write = (vi.pfi.fi_openflags & FWRITE) != 0;
      if (query.writers && !write) continue;
      OpenFile f;
      f.pid = pid;
      f.ino = v.vst_ino;
      f.write = write;
      if (name_len > 0) {
        errno = 0;
        r = proc_pidfdinfo(pid, fds[i].proc_fd, PROC_PIDFDVNODEPATHINFO, &vp, static_cast<int>(sizeof vp));
        if (r < static_cast<int>(sizeof vp)) {
          if (!hidden && (errno == EPERM || errno == EACCES)) {
            hidden = true;
            unreadable->push_back(pid);
          }
          continue;
        }
        vp.pvip.vip_path[sizeof vp.pvip.vip_path - 1] = '\0';
        const char* path = vp.pvip.vip_path;
        size_t len = strlen(path);
        if (len <= name_len || path[len - name_len - 1] != '/' || memcmp(path + len - name_len, query.name.data(), name_len) != 0) continue;
        f.path.assign(path, len);
      }
      out->push_back(std::move(f));
    }
  }
  return 0;
}

}  // namespace rw
