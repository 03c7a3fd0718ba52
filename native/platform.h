// runwarden native: the seam every platform implements.
//
// The common part of the addon (addon.cc: the N-API surface, argument
// checks, error construction; probe.cc: the probe's fact gathering) is
// written against POSIX plus this header. Whatever differs between kernels
// lives behind it, in exactly one file per platform, chosen by binding.gyp's
// `conditions` (never by #if in the common files):
//
//   fs_linux.cc   linux: statfs f_type magics, statx, flock(2). Built and tested.
//   fs_darwin.cc  darwin: statfs f_fstypename names, fstatat, flock(2), libproc.
//                 Compiled for macOS with zig; run on linux against the XNU
//                 model (native/xnu-model/); never run on a Mac.
//   fs_other.cc   anything else: no flock, no filesystem type; every call
//                 reports ENOSYS, and the TypeScript side answers unknown.
//   fs_win.cc     Windows: LockFileEx, the volume's filesystem name,
//                 process handles. Cross-compiled with zig; run under Wine
//                 (native/win/ holds the rest of the Windows addon).
//
// process_posix.cc holds what every POSIX platform shares (kill, getrlimit).
//
// Every function returns 0 on success or an errno value; none of them throws,
// allocates or touches N-API. Nothing here decides what a fact means.
#ifndef RUNWARDEN_PLATFORM_H_
#define RUNWARDEN_PLATFORM_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <string>
#include <vector>

// The longest path a call takes, in bytes: PATH_MAX, and on Windows the
// 32,767 characters of the \\?\ form (MAX_PATH is 260).
#if defined(_WIN32)
#define RW_PATH_MAX 32767
#else
#define RW_PATH_MAX PATH_MAX
#endif

namespace rw {

// The platform's name, as the addon exports it: "linux", "darwin", "win32" or "other".
extern const char* const kPlatformName;
// The lock the platform's legs take: "flock" (flock(2)), "LockFileEx"
// (Windows) or "none".
extern const char* const kLockPrimitive;
// Whether flock(2) exists here. Without it no lock is ever taken or probed.
extern const bool kHasFlock;
// How this platform names a filesystem type: by a magic number (linux
// statfs f_type) or by a name (darwin statfs f_fstypename).
extern const bool kFsTypeIsName;

// A filesystem type in this platform's terms: `magic` when !kFsTypeIsName,
// `name` (NUL-terminated) when kFsTypeIsName.
struct FsType {
  uint32_t magic = 0;
  char name[32] = {0};
};

// The known-local list, in the same terms (only one of the two is used).
struct LocalTypes {
  std::vector<uint32_t> magics;
  std::vector<std::string> names;
};

// statfs(path) (following links, as statfs does).
int FsTypeOfPath(const char* path, FsType* out);

// fstatfs(fd): the type of the filesystem the open file or directory is on.
int FsTypeOfFd(int fd, FsType* out);

// The filesystem type of the entry `name` in the directory open as `dirfd`,
// without following a symlink there, and without opening the file for I/O
// where the kernel allows it (linux: an O_PATH descriptor, so a FUSE or NFS
// server sees no open), so the gate can refuse a file bind-mounted from a
// non-local filesystem before it is opened (CONTRACT §4.2 step 2). Returns 0
// or an errno value.
int FsTypeOfEntry(int dirfd, const char* name, FsType* out);

// The flags the probe opens a run directory with: never following a link at
// its last component, and (linux, O_PATH) without opening it for reading, so
// the filesystem and inotify watchers see no open of the directory.
extern const int kProbeDirFlags;

// What the probe learns of a directory entry without opening it.
// `mount_root`: 1 when the entry is the root of a mount (something is mounted
// on it, e.g. one file bind-mounted from elsewhere), 0 when it is known not to
// be (so it lies on its directory's mount), -1 when the platform cannot tell.
// `mount_id`: an id of the entry's mount that the kernel never reuses while it
// runs (linux >= 6.8, STATX_MNT_ID_UNIQUE), or 0 when there is none: a mount's
// filesystem never changes, so a judgement keyed on it never goes stale.
struct EntryStat {
  dev_t dev = 0;
  uint64_t ino = 0;
  uint32_t mode = 0;
  uint64_t size = 0;
  int mount_root = -1;
  uint64_t mount_id = 0;
};

// Describes the entry `name` of the directory open as `dirfd`, not following
// a symlink there and opening nothing (linux statx, darwin fstatat). Returns 0
// or an errno value.
int StatEntry(int dirfd, const char* name, EntryStat* out);

// Opens the entry `name` of the directory open as `dirfd` with `flags`, only
// if reaching it crosses no mount (linux openat2 RESOLVE_NO_XDEV): the file
// opened is then on the directory's own mount, atomically, whatever was
// mounted or renamed since it was looked at. Returns 0 and sets *fd; EXDEV
// when the entry is (now) a mount point, nothing opened; ENOSYS when the
// platform or kernel cannot (the caller then opens it plainly and checks the
// descriptor); or another errno value from the open.
int OpenOnDirMount(int dirfd, const char* name, int flags, int* fd);

// flock(2), non-blocking for the two lock kinds, retried on EINTR. Returns 0
// when granted, kContended when another holder has it (EWOULDBLOCK), or an
// errno value.
enum class LockKind { kShared, kExclusive, kUnlock };
constexpr int kContended = -1;
int Flock(int fd, LockKind kind);

// What the system offers that TypeScript must not assume from the platform's
// name (src/kernel/system.ts reads these through the addon's `system` export):
// - kHasProcFs: a /proc to read (linux): /proc/locks, /proc/<pid>/fd,
//   /proc/<pid>/environ. darwin has none.
// - kHolderTable: where the holders of a lock file are found: "proc-locks"
//   (linux: the kernel's flock table and /proc/<pid>/fd, read by TypeScript),
//   "libproc" (darwin: OpenFilesOnDevice below; descriptors and their open
//   modes, no lock table), or "none".
// - kOneLockList: flock(2) locks and fcntl(2) record locks are one list, so a
//   record lock blocks a flock (darwin, RecordLockHolder below); apart on
//   linux.
extern const bool kHasProcFs;
extern const char* const kHolderTable;
extern const bool kOneLockList;

// One open descriptor of another process on a file: its pid, the file's
// inode, whether it is open for writing, and the path the kernel gives it.
struct OpenFile {
  int pid = 0;
  uint64_t ino = 0;
  bool write = false;
  std::string path;
};

// Which descriptors a census keeps (each condition given must hold): `ino`
// (0: any file of the device), `writers` (open for writing only), `name`
// (non-empty: the last component of the path the kernel gives the file; the
// path is then read for each descriptor that meets the other conditions,
// and only for those, and returned; empty: no path is read, and each
// OpenFile's `path` is empty).
struct OpenFileQuery {
  uint64_t ino = 0;
  bool writers = false;
  std::string name;
};

// Every descriptor, of every process this one may inspect except
// `except_pid`, on a file of device `dev` that `query` keeps; *unreadable lists the pids of the
// processes whose descriptors could not all be read (darwin: another user's,
// unless root; one whose descriptor the sandbox hides). darwin: libproc
// proc_listpids, PROC_PIDLISTFDS, PROC_PIDFDVNODEPATHINFO. ENOSYS where there
// is no such census here (linux reads /proc from TypeScript).
int OpenFilesOnDevice(uint64_t dev, int except_pid, const OpenFileQuery& query, std::vector<OpenFile>* out, std::vector<int>* unreadable);

// The pid of the process whose record lock (fcntl(2) F_SETLK, lockf(3))
// keeps a flock of kind `kind` from being granted on the file open as `fd`,
// where flock(2) and record locks are one list (darwin: F_GETLK answers the
// first lock that would block, a record lock with its holder's pid, a flock
// with -1), into *pid; 0 when what blocks is a flock, when nothing does, or
// where the lists are apart (linux: a flock is blocked by flocks only, and
// nothing is called). Returns 0 or an errno value.
int RecordLockHolder(int fd, LockKind kind, int* pid);

// The most descriptors the kernel lets a process hold whatever its
// RLIMIT_NOFILE says (darwin: sysctl kern.maxfilesperproc, xnu enforcing the
// smaller of the two), into *out. ENOSYS where RLIMIT_NOFILE is the whole
// rule (linux).
int MaxFilesPerProcess(int64_t* out);

// Whether a process (or, POSIX, a process group) exists: POSIX kill(pid, 0)
// (ESRCH gone; success or EPERM present), Windows a handle from OpenProcess.
// Windows has no process groups: GroupPresence answers kUnknown there.
enum class Presence { kGone, kPresent, kUnknown };
Presence ProcessPresence(int pid);
Presence GroupPresence(int pgid);

// The descriptors this process may have open, soft and hard (getrlimit
// RLIMIT_NOFILE; infinity when unlimited). Returns 0 or an errno value.
int DescriptorLimit(double* soft, double* hard);

// Gives the memory the process's allocator holds free back to the kernel
// (linux glibc: malloc_trim(0), which also releases the free pages inside
// the arenas threads leave behind; darwin: malloc_zone_pressure_relief on
// every zone). Returns whether anything was released; false where the
// platform has no such call.
bool ReleaseFreeMemory();

}  // namespace rw

#endif  // RUNWARDEN_PLATFORM_H_
