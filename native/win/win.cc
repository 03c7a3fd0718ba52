// runwarden native, Windows: the primitives of win.h.
#include "win.h"

#include <errno.h>
#include <string.h>
#include <uv.h>

namespace rw {
namespace win {
namespace {

thread_local DWORD last_win32 = 0;

int Fail(DWORD err) {
  last_win32 = err;
  return ErrnoOfWin32(err);
}

#ifndef STATUS_FILE_IS_A_DIRECTORY
constexpr NTSTATUS kStatusFileIsADirectory = static_cast<NTSTATUS>(0xC00000BAL);
#else
constexpr NTSTATUS kStatusFileIsADirectory = STATUS_FILE_IS_A_DIRECTORY;
#endif
constexpr NTSTATUS kStatusNotADirectory = static_cast<NTSTATUS>(0xC0000103L);
constexpr NTSTATUS kStatusStoppedOnSymlink = static_cast<NTSTATUS>(0x8000002DL);

// FileFsDeviceInformation: [MS-FSCC] 2.5.10
// (learn.microsoft.com/openspecs/windows_protocols/ms-fscc/616b66d5-b335-4e1c-8f87-b4a55e8d3e4a).
struct FsDeviceInformation {
  ULONG DeviceType;
  ULONG Characteristics;
};
constexpr ULONG kFileDeviceNetworkFileSystem = 0x14;
constexpr ULONG kFileRemoteDevice = 0x10;
constexpr int kFileFsDeviceInformation = 4;

// The libuv functions of the host (win.h), found once.
struct Uv {
  decltype(&uv_open_osfhandle) open = nullptr;
  decltype(&uv_get_osfhandle) get = nullptr;
  decltype(&uv_fs_close) close = nullptr;
  decltype(&uv_fs_req_cleanup) cleanup = nullptr;
};

const Uv& HostUv() {
  static const Uv uv = [] {
    Uv u;
    // The import library names node.exe, so the loader bound the N-API
    // imports to the module of that name; the process's executable otherwise.
    HMODULE host = GetModuleHandleW(L"node.exe");
    if (host == nullptr) host = GetModuleHandleW(nullptr);
    u.open = reinterpret_cast<decltype(&uv_open_osfhandle)>(reinterpret_cast<void*>(GetProcAddress(host, "uv_open_osfhandle")));
    u.get = reinterpret_cast<decltype(&uv_get_osfhandle)>(reinterpret_cast<void*>(GetProcAddress(host, "uv_get_osfhandle")));
    u.close = reinterpret_cast<decltype(&uv_fs_close)>(reinterpret_cast<void*>(GetProcAddress(host, "uv_fs_close")));
    u.cleanup = reinterpret_cast<decltype(&uv_fs_req_cleanup)>(reinterpret_cast<void*>(GetProcAddress(host, "uv_fs_req_cleanup")));
    return u;
  }();
  return uv;
}

bool IsSlash(wchar_t c) { return c == L'\\' || c == L'/'; }

}  // namespace

DWORD LastWin32() { return last_win32; }

// The errno C runtimes and libuv give these Win32 errors (libuv's
// uv_translate_sys_error is the model for the file errors).
int ErrnoOfWin32(DWORD err) {
  switch (err) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_DRIVE:
    case ERROR_BAD_NETPATH:
    case ERROR_BAD_NET_NAME:
    case ERROR_BAD_PATHNAME:
    case ERROR_INVALID_NAME:
      return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_PRIVILEGE_NOT_HELD:
    case ERROR_NETWORK_ACCESS_DENIED:
      return EACCES;
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
    case ERROR_BUSY:
    case ERROR_PIPE_BUSY:
      return EBUSY;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS:
      return EEXIST;
    case ERROR_DIRECTORY:
      return ENOTDIR;
    case ERROR_DIR_NOT_EMPTY:
      return ENOTEMPTY;
    case ERROR_FILENAME_EXCED_RANGE:
    case ERROR_BUFFER_OVERFLOW:
      return ENAMETOOLONG;
    case ERROR_INVALID_HANDLE:
      return EBADF;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
      return ENOMEM;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
      return ENOSPC;
    case ERROR_NOT_SAME_DEVICE:
      return EXDEV;
    case ERROR_CANT_RESOLVE_FILENAME:
    case ERROR_CANT_ACCESS_FILE:
      return ELOOP;
    case ERROR_NOT_SUPPORTED:
    case ERROR_INVALID_FUNCTION:
    case ERROR_CALL_NOT_IMPLEMENTED:
      return ENOSYS;
    case ERROR_INVALID_PARAMETER:
    case ERROR_NO_UNICODE_TRANSLATION:
      return EINVAL;
    case ERROR_TOO_MANY_OPEN_FILES:
      return EMFILE;
    case ERROR_WRITE_PROTECT:
      return EROFS;
    default:
      return EIO;
  }
}

int ErrnoOfStatus(NTSTATUS status) {
  if (status == kStatusFileIsADirectory) {
    last_win32 = ERROR_DIRECTORY;
    return EISDIR;
  }
  if (status == kStatusNotADirectory) {
    last_win32 = ERROR_DIRECTORY;
    return ENOTDIR;
  }
  if (status == kStatusStoppedOnSymlink) {
    last_win32 = ERROR_CANT_RESOLVE_FILENAME;
    return ELOOP;
  }
  return Fail(RtlNtStatusToDosError(status));
}

bool IsEntryName(const char* name) {
  if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return false;
  return strpbrk(name, "/\\:") == nullptr;
}

std::string Utf8(const wchar_t* s, size_t len) {
  if (len == 0) return std::string();
  int n = WideCharToMultiByte(CP_UTF8, 0, s, static_cast<int>(len), nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<size_t>(n > 0 ? n : 0), '\0');
  if (n > 0) WideCharToMultiByte(CP_UTF8, 0, s, static_cast<int>(len), &out[0], n, nullptr, nullptr);
  return out;
}

namespace {
int Wide(const char* utf8, std::wstring* out) {
  const size_t len = strlen(utf8);
  if (len == 0) {
    out->clear();
    return 0;
  }
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, static_cast<int>(len), nullptr, 0);
  if (n <= 0) return Fail(GetLastError());
  if (static_cast<size_t>(n) > kMaxWidePath) return Fail(ERROR_FILENAME_EXCED_RANGE);
  out->assign(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, static_cast<int>(len), &(*out)[0], n);
  return 0;
}
}  // namespace

int WideName(const char* utf8, std::wstring* out) {
  if (!IsEntryName(utf8)) {
    last_win32 = ERROR_INVALID_NAME;
    return EINVAL;
  }
  return Wide(utf8, out);
}

// GetFullPathNameW resolves "." and ".." and makes the path absolute (against
// the process's current directory, or its drive's); the \\?\ prefix then turns
// off every further rewriting and the MAX_PATH limit. An already prefixed path
// (\\?\ or \\.\) is taken as given.
int WidePath(const char* utf8, std::wstring* out) {
  std::wstring given;
  int err = Wide(utf8, &given);
  if (err != 0) return err;
  if (given.empty()) return Fail(ERROR_PATH_NOT_FOUND);
  if (given.size() >= 4 && IsSlash(given[0]) && IsSlash(given[1]) && (given[2] == L'?' || given[2] == L'.') && IsSlash(given[3])) {
    *out = given;
    for (auto& c : *out) {
      if (c == L'/') c = L'\\';
    }
    return 0;
  }
  DWORD n = GetFullPathNameW(given.c_str(), 0, nullptr, nullptr);
  if (n == 0) return Fail(GetLastError());
  std::wstring full(n, L'\0');
  n = GetFullPathNameW(given.c_str(), n, &full[0], nullptr);
  if (n == 0) return Fail(GetLastError());
  full.resize(n);
  if (full.size() >= 2 && IsSlash(full[0]) && IsSlash(full[1])) {
    // \\server\share\… → \\?\UNC\server\share\…
    *out = L"\\\\?\\UNC\\" + full.substr(2);
  } else {
    *out = L"\\\\?\\" + full;
  }
  if (out->size() > kMaxWidePath) return Fail(ERROR_FILENAME_EXCED_RANGE);
  return 0;
}

int OpenRelative(HANDLE dir, const std::wstring& name, ACCESS_MASK access, ULONG disposition, ULONG options, HANDLE* out) {
  if (name.size() * sizeof(wchar_t) > 0xFFFE) return Fail(ERROR_FILENAME_EXCED_RANGE);
  UNICODE_STRING us;
  us.Buffer = const_cast<PWSTR>(name.c_str());
  us.Length = static_cast<USHORT>(name.size() * sizeof(wchar_t));
  us.MaximumLength = us.Length;
  OBJECT_ATTRIBUTES oa;
  InitializeObjectAttributes(&oa, &us, OBJ_CASE_INSENSITIVE, dir, nullptr);
  IO_STATUS_BLOCK io;
  HANDLE h = nullptr;
  NTSTATUS st = NtCreateFile(&h, access | SYNCHRONIZE, &oa, &io, nullptr, FILE_ATTRIBUTE_NORMAL,
                             FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, disposition,
                             options | FILE_SYNCHRONOUS_IO_NONALERT, nullptr, 0);
  if (st < 0) return ErrnoOfStatus(st);
  *out = h;
  return 0;
}

namespace {
// A reparse point that stands for another name (a symbolic link, a junction,
// a mount point): IsReparseTagNameSurrogate
// (learn.microsoft.com/windows/win32/fileio/reparse-point-tags). Other reparse
// points (cloud placeholders, deduplicated files) are the file itself.
bool IsLink(HANDLE h, DWORD attributes) {
  if ((attributes & FILE_ATTRIBUTE_REPARSE_POINT) == 0) return false;
  FILE_ATTRIBUTE_TAG_INFO tag;
  if (!GetFileInformationByHandleEx(h, FileAttributeTagInfo, &tag, sizeof tag)) return true;  // cannot tell: a link
  return IsReparseTagNameSurrogate(tag.ReparseTag);
}
}  // namespace

int OpenDirectory(const char* path, ACCESS_MASK access, HANDLE* out) {
  std::wstring wide;
  int err = WidePath(path, &wide);
  if (err != 0) return err;
  HANDLE h = CreateFileW(wide.c_str(), access | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
                         FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                         FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  if (h == INVALID_HANDLE_VALUE) return Fail(GetLastError());
  FILE_BASIC_INFO basic;
  if (!GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic)) {
    err = Fail(GetLastError());
    CloseHandle(h);
    return err;
  }
  if (IsLink(h, basic.FileAttributes)) {
    CloseHandle(h);
    last_win32 = ERROR_CANT_RESOLVE_FILENAME;
    return ELOOP;
  }
  if ((basic.FileAttributes & FILE_ATTRIBUTE_DIRECTORY) == 0) {
    CloseHandle(h);
    last_win32 = ERROR_DIRECTORY;
    return ENOTDIR;
  }
  *out = h;
  return 0;
}

int FactsOf(HANDLE h, Facts* out) {
  BY_HANDLE_FILE_INFORMATION info;
  FILE_BASIC_INFO basic;
  if (!GetFileInformationByHandle(h, &info) || !GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic)) {
    return Fail(GetLastError());
  }
  out->dev = info.dwVolumeSerialNumber;
  out->ino = (static_cast<uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
  out->size = (static_cast<uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  out->attributes = info.dwFileAttributes;
  out->mtime = basic.LastWriteTime.QuadPart;
  out->ctime = basic.ChangeTime.QuadPart;
  if (IsLink(h, info.dwFileAttributes)) {
    out->mode = kModeLink | 0777;
  } else if ((info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0) {
    out->mode = kModeDir | 0777;
  } else {
    out->mode = kModeReg | ((info.dwFileAttributes & FILE_ATTRIBUTE_READONLY) != 0 ? 0444 : 0666);
  }
  return 0;
}

// libuv (uv__filetime_to_timespec) splits the count since 1970 into seconds
// and nanoseconds; Node's Stats then computes sec * 1e3 + nsec / 1e6.
double MsOfFiletime(int64_t t) {
  const int64_t since1970 = t - 116444736000000000LL;
  int64_t sec = since1970 / 10000000;
  int64_t rem = since1970 % 10000000;
  if (rem < 0) {
    rem += 10000000;
    sec -= 1;
  }
  return static_cast<double>(sec) * 1e3 + static_cast<double>(rem * 100) / 1e6;
}

namespace {
// Whether the volume a handle's file lies on is reached over the network by
// its name: a UNC path (\\?\UNC\server\share\...), or a drive letter that
// GetDriveTypeW calls DRIVE_REMOTE (a mapped network drive:
// learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-getdrivetypew).
// The name comes from GetFinalPathNameByHandleW
// (learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-getfinalpathnamebyhandlew),
// so it is the file's, whatever path reached it. A handle with no DOS name
// (a volume mounted on a folder only) is judged by its device alone.
bool RemoteByName(HANDLE h) {
  std::wstring path(MAX_PATH, L'\0');
  const DWORD flags = FILE_NAME_NORMALIZED | VOLUME_NAME_DOS;
  DWORD n = GetFinalPathNameByHandleW(h, &path[0], static_cast<DWORD>(path.size()), flags);
  if (n >= path.size() && n <= kMaxWidePath + 1) {  // too small: n is the size it needs
    path.assign(n, L'\0');
    n = GetFinalPathNameByHandleW(h, &path[0], static_cast<DWORD>(path.size()), flags);
  }
  if (n == 0 || n >= path.size()) return false;
  path.resize(n);
  if (path.rfind(L"\\\\?\\UNC\\", 0) == 0 || (path.size() >= 2 && IsSlash(path[0]) && IsSlash(path[1]) && path[2] != L'?')) return true;
  size_t at = path.rfind(L"\\\\?\\", 0) == 0 ? 4 : 0;
  if (path.size() < at + 2 || path[at + 1] != L':') return false;
  const wchar_t root[4] = {path[at], L':', L'\\', L'\0'};
  return GetDriveTypeW(root) == DRIVE_REMOTE;
}
}  // namespace

int FsNameOf(HANDLE h, char (&name)[32]) {
  wchar_t fs[MAX_PATH + 1];
  if (!GetVolumeInformationByHandleW(h, nullptr, 0, nullptr, nullptr, nullptr, fs, MAX_PATH + 1)) {
    return Fail(GetLastError());
  }
  IO_STATUS_BLOCK io;
  FsDeviceInformation dev = {0, 0};
  NTSTATUS st = NtQueryVolumeInformationFile(h, &io, &dev, sizeof dev, static_cast<FS_INFORMATION_CLASS>(kFileFsDeviceInformation));
  if (st < 0) return ErrnoOfStatus(st);
  const bool remote = dev.DeviceType == kFileDeviceNetworkFileSystem || (dev.Characteristics & kFileRemoteDevice) != 0 || RemoteByName(h);
  std::string utf8 = Utf8(fs, wcslen(fs));
  std::string full = (remote ? "remote:" : "") + utf8;
  size_t n = full.size() < sizeof name - 1 ? full.size() : sizeof name - 1;
  memcpy(name, full.data(), n);
  name[n] = '\0';
  return 0;
}

int FdOfHandle(HANDLE h, int* fd) {
  const Uv& uv = HostUv();
  if (uv.open == nullptr) {
    CloseHandle(h);
    last_win32 = ERROR_PROC_NOT_FOUND;
    return ENOSYS;
  }
  int r = uv.open(h);
  if (r < 0) {
    CloseHandle(h);
    last_win32 = ERROR_TOO_MANY_OPEN_FILES;
    return EMFILE;
  }
  *fd = r;
  return 0;
}

HANDLE HandleOfFd(int fd) {
  const Uv& uv = HostUv();
  if (uv.get == nullptr || fd < 0) return INVALID_HANDLE_VALUE;
  HANDLE h = uv.get(fd);
  return h == nullptr ? INVALID_HANDLE_VALUE : h;
}

int CloseFd(napi_env env, int fd) {
  const Uv& uv = HostUv();
  if (uv.close == nullptr || uv.cleanup == nullptr) return ENOSYS;
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) return ENOSYS;
  uv_fs_t req;
  int r = uv.close(loop, &req, fd, nullptr);
  uv.cleanup(&req);
  return r == 0 ? 0 : (r == UV_EBADF ? EBADF : EIO);
}

int ReadAt(HANDLE h, void* buf, size_t len, uint64_t offset, size_t* got) {
  size_t done = 0;
  while (done < len) {
    OVERLAPPED ov = {};
    const uint64_t at = offset + done;
    ov.Offset = static_cast<DWORD>(at);
    ov.OffsetHigh = static_cast<DWORD>(at >> 32);
    const size_t left = len - done;
    const DWORD want = left > 0x40000000 ? 0x40000000 : static_cast<DWORD>(left);
    DWORD n = 0;
    if (!ReadFile(h, static_cast<char*>(buf) + done, want, &n, &ov)) {
      DWORD e = GetLastError();
      if (e == ERROR_HANDLE_EOF) break;
      return Fail(e);
    }
    done += n;
    if (n < want) break;  // a regular file reads short only at its end
  }
  *got = done;
  return 0;
}

}  // namespace win
}  // namespace rw
