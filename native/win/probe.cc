// runwarden native, Windows: gathering a probe's facts (CONTRACT §4.2 steps
// 2-5), the Windows counterpart of native/probe.cc, with the same stages and
// slots (facts.h).
//
// 1. The run directory is opened without following a link (win.h
//    OpenDirectory, or the descriptor the caller holds), and its volume's
//    filesystem must be on the known-local list (win.h FsNameOf: a share or a
//    mapped network drive reads "remote:…", never on the list). The lock file
//    is an entry of that directory, opened relative to its handle; a file
//    cannot lie on another volume than its directory but through a reparse
//    point, and a reparse point that stands for another name is refused
//    before anything is read (below), so one check serves both.
// 2. Open read-only, never created, relative to the directory, not following
//    a reparse point (FILE_OPEN_REPARSE_POINT), not a directory
//    (FILE_NON_DIRECTORY_FILE). Every share mode is granted to others; a file
//    another program opened without sharing answers ERROR_SHARING_VIOLATION
//    at once (OpenError, EBUSY): an open on Windows does not wait.
// 3. A link (a name-surrogate reparse point) is not regular: NotRegular.
// 4. ReadFile of up to head_len bytes at offset 0, GetFileSizeEx.
// 5. LockFileEx shared with LOCKFILE_FAIL_IMMEDIATELY on the leg's byte
//    (fs_win.cc), unlocked at once when granted, then the handle closed:
//    granted, contended (ERROR_LOCK_VIOLATION) or failed.
//
// Creates, writes and removes nothing. Every failure is a stage TypeScript
// turns into `unknown`.
#include <errno.h>
#include <string.h>

#include <string>

#include "../facts.h"
#include "../platform.h"
#include "win.h"

namespace rw {

int LockHandle(HANDLE h, LockKind kind);  // fs_win.cc

bool IsLocal(const FsType& type, const LocalTypes& list) {
  for (const auto& name : list.names) {
    if (_stricmp(name.c_str(), type.name) == 0) return true;
  }
  return false;
}

namespace {

int GatherAt(HANDLE dir, const char* name, const LocalTypes& list, const ProbeBuffers& buf) {
  double* out = buf.out;
  FsType type;
  int err = win::FsNameOf(dir, type.name);
  if (err != 0) {
    out[kOutErrno] = err;
    return kFsError;
  }
  if (!IsLocal(type, list)) return kFsNotLocal;
  std::wstring wide;
  err = win::WideName(name, &wide);
  if (err != 0) {
    out[kOutErrno] = err;
    return kOpenError;
  }
  HANDLE h = nullptr;
  err = win::OpenRelative(dir, wide, GENERIC_READ, FILE_OPEN, FILE_OPEN_REPARSE_POINT | FILE_NON_DIRECTORY_FILE, &h);
  if (err == EISDIR) {
    out[kOutMode] = win::kModeDir | 0777;
    return kNotRegular;
  }
  if (err != 0) {
    out[kOutErrno] = err;
    return kOpenError;
  }
  win::Facts facts;
  err = win::FactsOf(h, &facts);
  if (err != 0) {
    out[kOutErrno] = err;
    CloseHandle(h);
    return kOpenError;
  }
  if ((facts.mode & 0170000) != win::kModeReg) {
    out[kOutMode] = facts.mode;
    CloseHandle(h);
    return kNotRegular;
  }
  size_t n = 0;
  err = win::ReadAt(h, buf.head, buf.head_len, 0, &n);
  if (err != 0) {
    out[kOutErrno] = err;
    CloseHandle(h);
    return kReadError;
  }
  LARGE_INTEGER size;
  if (!GetFileSizeEx(h, &size)) size.QuadPart = static_cast<LONGLONG>(facts.size);
  out[kOutHeadLength] = static_cast<double>(n);
  out[kOutFileSize] = static_cast<double>(size.QuadPart);
  int r = LockHandle(h, LockKind::kShared);
  int stage = r == 0 ? kSharedGranted : r == kContended ? kSharedContended : kSharedError;
  if (stage == kSharedError) out[kOutErrno] = r;
  if (r == 0) LockHandle(h, LockKind::kUnlock);  // at once; closing the handle would release it too
  CloseHandle(h);
  return stage;
}

}  // namespace

// The directory part and the last component of a path, split at its last
// '/' or '\\' (trailing separators dropped, as path.win32.dirname does).
int GatherProbeFacts(const char* lock_path, const LocalTypes& list, const ProbeBuffers& buf) {
  std::string path(lock_path);
  while (path.size() > 1 && (path.back() == '/' || path.back() == '\\')) path.pop_back();
  size_t cut = path.find_last_of("/\\");
  std::string dir = cut == std::string::npos ? std::string(".") : path.substr(0, cut + 1);
  std::string name = cut == std::string::npos ? path : path.substr(cut + 1);
  HANDLE h = nullptr;
  int err = win::OpenDirectory(dir.c_str(), FILE_LIST_DIRECTORY, &h);
  if (err != 0) {
    buf.out[kOutErrno] = err;
    return kFsError;
  }
  int stage = GatherAt(h, name.c_str(), list, buf);
  CloseHandle(h);
  return stage;
}

int GatherProbeFactsAt(int dirfd, const char* name, const LocalTypes& list, const ProbeBuffers& buf) {
  HANDLE h = win::HandleOfFd(dirfd);
  if (h == INVALID_HANDLE_VALUE) {
    buf.out[kOutErrno] = EBADF;
    return kFsError;
  }
  return GatherAt(h, name, list, buf);
}

}  // namespace rw
