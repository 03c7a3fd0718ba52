// runwarden native, Windows: a run directory's two files in one crossing,
// the counterpart of native/runfiles.cc (the N-API surface both share is
// runfiles_js.cc). The run directory is opened without following a link at
// its last component (win.h OpenDirectory), each file relative to it with
// FILE_OPEN_REPARSE_POINT, never created; facts as Node's fs.fstat reports
// them on Windows (win.h FactsOf), so identities compare equal across the two.
// Failures are facts in `out`, never thrown. The directory's descriptor is
// returned open, and the stream's when it is longer than the tail buffer; every
// other handle is closed here.
#include <napi.h>

#include <errno.h>
#include <string.h>

#include <string>
#include <vector>

#include "../addon_js.h"
#include "../runfiles.h"
#include "win.h"

namespace rw {
namespace runfiles {
namespace {

void OneFile(RunFiles* rf, HANDLE dir, int which) {
  double* o = rf->out + kFileBase + which * kFileSlots;
  for (int i = 0; i < kFileSlots; i++) o[i] = 0;
  o[kSlot_fd] = -1;
  std::wstring name;
  HANDLE h = nullptr;
  int err = win::WideName(rf->name[which].c_str(), &name);
  if (err == 0) err = win::OpenRelative(dir, name, GENERIC_READ, FILE_OPEN, FILE_OPEN_REPARSE_POINT, &h);
  if (err != 0) {
    o[kSlot_status] = kOpenFailed;
    o[kSlot_errnum] = err;
    return;
  }
  win::Facts f;
  err = win::FactsOf(h, &f);
  if (err != 0) {
    o[kSlot_status] = kStatFailed;
    o[kSlot_errnum] = err;
    CloseHandle(h);
    return;
  }
  o[kSlot_mode] = f.mode;
  o[kSlot_size] = static_cast<double>(f.size);
  o[kSlot_dev] = static_cast<double>(f.dev);
  o[kSlot_ino] = static_cast<double>(f.ino);
  o[kSlot_mtimeMs] = win::MsOfFiletime(f.mtime);
  o[kSlot_ctimeMs] = win::MsOfFiletime(f.ctime);
  if ((f.mode & 0170000) != win::kModeReg) {
    o[kSlot_status] = kNotRegular;
    CloseHandle(h);
    return;
  }
  const size_t size = static_cast<size_t>(f.size);
  size_t want;
  uint64_t at;
  if (which == 0) {
    want = size < rf->len[0] ? size : rf->len[0];
    at = size - want;
  } else {
    if (size + 1 > rf->len[1]) {
      o[kSlot_status] = kNotRead;
      CloseHandle(h);
      return;
    }
    want = size + 1;
    at = 0;
  }
  size_t n = 0;
  err = want == 0 ? 0 : win::ReadAt(h, rf->buf[which], want, at, &n);
  if (err != 0) {
    o[kSlot_status] = kReadFailed;
    o[kSlot_errnum] = err;
    CloseHandle(h);
    return;
  }
  if (which == 0 && size > rf->len[0]) {
    int fd = -1;
    err = win::FdOfHandle(h, &fd);  // closes the handle when it fails
    if (err != 0) {
      o[kSlot_status] = kReadFailed;
      o[kSlot_errnum] = err;
      return;
    }
    o[kSlot_fd] = fd;
  } else {
    CloseHandle(h);
  }
  o[kSlot_status] = kRead;
  o[kSlot_bytes] = static_cast<double>(n);
  o[kSlot_at] = static_cast<double>(at);
}

}  // namespace

// runFiles(handle, path, want) -> the run directory's descriptor, or -1 (the errno in slot 0).
Napi::Value Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RunFiles* rf = Handle(info);
  char path[RW_PATH_MAX + 1];
  int want = 0;
  if (rf == nullptr || info.Length() < 3 || !js::PathArg(env, info[1], path) || !WantArg(info, 2, &want)) return env.Undefined();
  HANDLE dir = nullptr;
  int dirfd = -1;
  int err = win::OpenDirectory(path, FILE_LIST_DIRECTORY | FILE_TRAVERSE, &dir);
  if (err == 0) err = win::FdOfHandle(dir, &dirfd);
  if (err != 0) {
    rf->out[kDirErrno] = err;
    rf->out[kDirFd] = -1;
    for (int w = 0; w < kFiles; w++) NotAsked(rf, w);
    return Napi::Number::New(env, -1);
  }
  rf->out[kDirErrno] = 0;
  rf->out[kDirFd] = dirfd;
  for (int w = 0; w < kFiles; w++) {
    if ((want & (1 << w)) != 0) {
      OneFile(rf, dir, w);
    } else {
      NotAsked(rf, w);
    }
  }
  return Napi::Number::New(env, dirfd);
}

// readDirSorted(path): FindFirstFileExW / FindNextFileW
// (learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-findfirstfileexw),
// names as UTF-8 bytes in latin1 strings, kinds d (directory), l (a link: a
// name-surrogate reparse point, its tag in dwReserved0) or f.
Napi::Value ReadDirSorted(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  char path[RW_PATH_MAX + 1];
  if (info.Length() < 1 || !js::PathArg(env, info[0], path)) return env.Undefined();
  std::wstring dir;
  int err = win::WidePath(path, &dir);
  if (err != 0) {
    js::ThrowErrno(env, err, "open", nullptr);
    return env.Undefined();
  }
  std::wstring pattern = dir + (dir.back() == L'\\' ? L"*" : L"\\*");
  WIN32_FIND_DATAW fd;
  HANDLE find = FindFirstFileExW(pattern.c_str(), FindExInfoBasic, &fd, FindExSearchNameMatch, nullptr, FIND_FIRST_EX_LARGE_FETCH);
  std::string bytes;
  std::vector<size_t> start;
  std::vector<char> kind;
  if (find == INVALID_HANDLE_VALUE) {
    DWORD e = GetLastError();
    if (e != ERROR_FILE_NOT_FOUND) {
      // A path that names something other than a directory: ENOTDIR, as opendir says.
      DWORD attrs = GetFileAttributesW(dir.c_str());
      err = attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY) == 0 ? ENOTDIR : win::ErrnoOfWin32(e);
      js::ThrowErrno(env, err, "FindFirstFileExW", nullptr);
      return env.Undefined();
    }
    return SortedNames(env, bytes, start, kind);  // no entry at all
  }
  do {
    const wchar_t* n = fd.cFileName;
    if (wcscmp(n, L".") == 0 || wcscmp(n, L"..") == 0) continue;
    start.push_back(bytes.size());
    bytes += win::Utf8(n, wcslen(n));
    const bool link = (fd.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0 && IsReparseTagNameSurrogate(fd.dwReserved0);
    kind.push_back(link ? 'l' : (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0 ? 'd' : 'f');
  } while (FindNextFileW(find, &fd));
  DWORD e = GetLastError();
  FindClose(find);
  if (e != ERROR_NO_MORE_FILES) {
    js::ThrowErrno(env, win::ErrnoOfWin32(e), "FindNextFileW", nullptr);
    return env.Undefined();
  }
  return SortedNames(env, bytes, start, kind);
}

}  // namespace runfiles
}  // namespace rw
