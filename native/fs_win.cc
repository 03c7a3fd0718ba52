// runwarden native, Windows: the platform seam (platform.h) for Windows.
// Cross-compiled on linux with zig (x86_64-windows-gnu, aarch64-windows-gnu)
// and run under Wine with Node for Windows (scripts/wine.mjs); never run on
// Windows itself.
//
// The lock is LockFileEx on one byte of the lock file
// (learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-lockfileex):
// exclusive for a leg, shared with LOCKFILE_FAIL_IMMEDIATELY for a probe,
// which never waits and, refused, fails with ERROR_LOCK_VIOLATION (33). The
// system unlocks what a process held when the process ends or closes the
// handle, however it ends (the same page's remarks: "the time it takes for
// the operating system to unlock these locks depends upon available system
// resources", so a dead leg may read held for a moment longer, never free
// too early). An exclusive range also refuses other handles' reads and
// writes of those bytes, so the byte locked lies far past anything ever
// written to the file (kLockOffset): the head stays readable to every probe
// while a leg holds the lock. Locking past the end of a file is allowed (the
// same remarks).
//
// Presence is by a process handle, never by a pid alone: OpenProcess
// (learn.microsoft.com/windows/win32/api/processthreadsapi/nf-processthreadsapi-openprocess)
// then a zero-timeout wait on it. A process that has exited but whose object
// some handle keeps alive is signaled: gone. GetExitCodeProcess's STILL_ACTIVE
// is not used alone, because a process may exit with code 259 (the caveat on
// learn.microsoft.com/windows/win32/api/processthreadsapi/nf-processthreadsapi-getexitcodeprocess);
// it is asked only when the handle cannot be waited on.
#include "platform.h"

#include <errno.h>
#include <math.h>

#include <string>

#include "win/win.h"

namespace rw {

const char* const kPlatformName = "win32";
const bool kHasFlock = true;
const bool kFsTypeIsName = true;
const int kProbeDirFlags = 0;
const char* const kLockPrimitive = "LockFileEx";
const bool kHasProcFs = false;
const char* const kHolderTable = "none";
// LockFileEx byte-range locks are the only kind Windows has: no second list to share.
const bool kOneLockList = false;

// The byte a leg locks: 1 GiB into the file, far past its 128-byte head.
constexpr uint64_t kLockOffset = 0x40000000ull;

int FsTypeOfPath(const char* path, FsType* out) {
  HANDLE h = INVALID_HANDLE_VALUE;
  // statfs follows links: so does this open (no FILE_FLAG_OPEN_REPARSE_POINT).
  std::wstring wide;
  int err = win::WidePath(path, &wide);
  if (err != 0) return err;
  h = CreateFileW(wide.c_str(), FILE_READ_ATTRIBUTES | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                  OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
  if (h == INVALID_HANDLE_VALUE) return win::ErrnoOfWin32(GetLastError());
  err = win::FsNameOf(h, out->name);
  CloseHandle(h);
  return err;
}

int FsTypeOfFd(int fd, FsType* out) {
  HANDLE h = win::HandleOfFd(fd);
  if (h == INVALID_HANDLE_VALUE) return EBADF;
  return win::FsNameOf(h, out->name);
}

int FsTypeOfEntry(int, const char*, FsType*) { return ENOSYS; }
int StatEntry(int, const char*, EntryStat*) { return ENOSYS; }
int OpenOnDirMount(int, const char*, int, int*) { return ENOSYS; }

int LockHandle(HANDLE h, LockKind kind) {
  OVERLAPPED ov = {};
  ov.Offset = static_cast<DWORD>(kLockOffset);
  ov.OffsetHigh = static_cast<DWORD>(kLockOffset >> 32);
  if (kind == LockKind::kUnlock) {
    if (UnlockFileEx(h, 0, 1, 0, &ov)) return 0;
    DWORD e = GetLastError();
    return e == ERROR_NOT_LOCKED ? 0 : win::ErrnoOfWin32(e);  // as flock(LOCK_UN) of an unlocked file
  }
  DWORD flags = LOCKFILE_FAIL_IMMEDIATELY | (kind == LockKind::kExclusive ? LOCKFILE_EXCLUSIVE_LOCK : 0);
  if (LockFileEx(h, flags, 0, 1, 0, &ov)) return 0;
  DWORD e = GetLastError();
  if (e == ERROR_LOCK_VIOLATION || e == ERROR_IO_PENDING) return kContended;
  return win::ErrnoOfWin32(e);
}

int Flock(int fd, LockKind kind) {
  HANDLE h = win::HandleOfFd(fd);
  if (h == INVALID_HANDLE_VALUE) return EBADF;
  return LockHandle(h, kind);
}

bool ReleaseFreeMemory() { return false; }

int OpenFilesOnDevice(uint64_t, int, const OpenFileQuery&, std::vector<OpenFile>*, std::vector<int>*) { return ENOSYS; }

int RecordLockHolder(int, LockKind, int* pid) {
  *pid = 0;
  return 0;
}

int MaxFilesPerProcess(int64_t*) { return ENOSYS; }

Presence ProcessPresence(int pid) {
  HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, FALSE, static_cast<DWORD>(pid));
  if (h == nullptr) {
    DWORD e = GetLastError();
    // No process has that id (OpenProcess fails with ERROR_INVALID_PARAMETER);
    // one exists that this user may not open.
    if (e == ERROR_INVALID_PARAMETER) return Presence::kGone;
    if (e == ERROR_ACCESS_DENIED) return Presence::kPresent;
    return Presence::kUnknown;
  }
  Presence answer = Presence::kUnknown;
  DWORD w = WaitForSingleObject(h, 0);
  if (w == WAIT_TIMEOUT) {
    answer = Presence::kPresent;
  } else if (w == WAIT_OBJECT_0) {
    answer = Presence::kGone;
  } else {
    DWORD code = 0;
    if (GetExitCodeProcess(h, &code)) answer = code == STILL_ACTIVE ? Presence::kUnknown : Presence::kGone;
  }
  CloseHandle(h);
  return answer;
}

// Windows has no process groups to signal: nothing can be said of one.
Presence GroupPresence(int) { return Presence::kUnknown; }

// Node's descriptors are its C runtime's: "C run-time I/O now supports up to
// 8,192 files open simultaneously at the low I/O level"
// (learn.microsoft.com/cpp/c-runtime-library/reference/setmaxstdio). Handles
// themselves have no per-process limit to speak of.
int DescriptorLimit(double* soft, double* hard) {
  *soft = 8192;
  *hard = 8192;
  return 0;
}

}  // namespace rw
