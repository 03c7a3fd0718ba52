// runwarden native, Windows: opening under a run directory by handle, the
// counterpart of native/dirfd.cc with the same exports and argument rules.
//
// The run directory is opened once without following a link at its last
// component (win.h OpenDirectory), and every entry relative to that handle
// (NtCreateFile with RootDirectory,
// learn.microsoft.com/windows/win32/api/winternl/nf-winternl-ntcreatefile), so
// a directory renamed or swapped for a junction meanwhile cannot redirect a
// read or a write: the handle names the directory that was opened. Entries
// are opened with FILE_OPEN_REPARSE_POINT and a link found there is refused
// (ELOOP), as O_NOFOLLOW refuses a symlink. Handles are not inheritable, so
// no child process keeps one (what O_CLOEXEC gives on POSIX). Each handle
// handed to JavaScript is a descriptor of Node's own C runtime (win.h), so
// fs.readSync, fs.fstatSync and the rest take it.
//
// Names are UTF-8 (strings, or the Buffers readDirSorted's names give). The
// `mode` of a created file is not applied: a file created here inherits its
// directory's access control list, as every file Windows creates does.
#include <napi.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <string>

#include "../addon_js.h"
#include "../platform.h"
#include "win.h"

namespace rw {
namespace {

bool FdArg(const Napi::CallbackInfo& info, size_t i, const char* what, int* fd) {
  int64_t v = 0;
  if (info.Length() <= i || !js::IntArg(info.Env(), info[i], what, &v)) return false;
  if (v < 0) {
    std::string msg = std::string(what) + " must be >= 0";
    js::ThrowUsage(info.Env(), "ERR_OUT_OF_RANGE", msg.c_str());
    return false;
  }
  *fd = static_cast<int>(v);
  return true;
}

// One entry of a directory: not empty, no '/', '\\' or ':', not "." or "..".
bool NameArg(const Napi::CallbackInfo& info, size_t i, std::wstring* wide) {
  char name[RW_PATH_MAX + 1];
  if (info.Length() <= i) {
    js::ThrowUsage(info.Env(), "ERR_INVALID_ARG_TYPE", "name must be a string or a Buffer");
    return false;
  }
  if (!js::PathArg(info.Env(), info[i], name)) return false;
  if (!win::IsEntryName(name)) {
    js::ThrowUsage(info.Env(), "ERR_INVALID_ARG_VALUE", "name must be one directory entry: not empty, no '/', '\\' or ':', not '.' or '..'");
    return false;
  }
  int err = win::WideName(name, wide);
  if (err != 0) {
    js::ThrowErrno(info.Env(), err, "MultiByteToWideChar", "name is not UTF-8");
    return false;
  }
  return true;
}

// The directory handle behind a descriptor, or a thrown EBADF.
bool DirArg(const Napi::CallbackInfo& info, size_t i, HANDLE* dir) {
  int fd = 0;
  if (!FdArg(info, i, "dirfd", &fd)) return false;
  *dir = win::HandleOfFd(fd);
  if (*dir == INVALID_HANDLE_VALUE) {
    js::ThrowErrno(info.Env(), EBADF, "uv_get_osfhandle", nullptr);
    return false;
  }
  return true;
}

std::string Detail(const char* what) { return std::string(what) + " (Windows error " + std::to_string(win::LastWin32()) + ")"; }

Napi::Value OpenDirNoFollow(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  char path[RW_PATH_MAX + 1];
  if (info.Length() < 1 || !js::PathArg(env, info[0], path)) return env.Undefined();
  HANDLE h = nullptr;
  int err = win::OpenDirectory(path, FILE_LIST_DIRECTORY | FILE_TRAVERSE, &h);
  int fd = -1;
  if (err == 0) err = win::FdOfHandle(h, &fd);
  if (err != 0) {
    js::ThrowErrno(env, err, "open", Detail(path).c_str());
    return env.Undefined();
  }
  return Napi::Number::New(env, fd);
}

// openAt(dirfd, name, flags[, mode]): `flags` are Node's fs.constants on
// Windows (the C runtime's _O_* values), translated as libuv translates them
// for fs.open: O_RDONLY, O_WRONLY or O_RDWR for the access (O_APPEND: append
// data only), O_CREAT / O_EXCL / O_TRUNC for the disposition. POSIX's
// O_NONBLOCK, O_NOFOLLOW and O_CLOEXEC have no value here: an open of a file
// never waits on Windows, a link is always refused, and no handle is ever
// inherited.
Napi::Value OpenAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  HANDLE dir = nullptr;
  std::wstring name;
  int64_t flags = 0, mode = 0600;
  if (!DirArg(info, 0, &dir) || !NameArg(info, 1, &name)) return env.Undefined();
  if (info.Length() < 3 || !js::IntArg(env, info[2], "flags", &flags)) return env.Undefined();
  if (info.Length() >= 4 && !info[3].IsUndefined() && !js::IntArg(env, info[3], "mode", &mode)) return env.Undefined();
  if (mode < 0 || mode > 07777) {
    js::ThrowUsage(env, "ERR_OUT_OF_RANGE", "mode must be from 0 to 0o7777");
    return env.Undefined();
  }
  const int f = static_cast<int>(flags);
  ACCESS_MASK access = FILE_READ_ATTRIBUTES;
  switch (f & (_O_RDONLY | _O_WRONLY | _O_RDWR)) {
    case _O_RDONLY:
      access |= FILE_GENERIC_READ;
      break;
    case _O_WRONLY:
      access |= FILE_GENERIC_WRITE;
      break;
    case _O_RDWR:
      access |= FILE_GENERIC_READ | FILE_GENERIC_WRITE;
      break;
    default:
      js::ThrowUsage(env, "ERR_INVALID_ARG_VALUE", "flags: O_RDONLY, O_WRONLY or O_RDWR");
      return env.Undefined();
  }
  if ((f & _O_APPEND) != 0) {
    access &= ~static_cast<ACCESS_MASK>(FILE_WRITE_DATA);
    access |= FILE_APPEND_DATA;
  }
  ULONG disposition = FILE_OPEN;
  if ((f & _O_CREAT) != 0) {
    disposition = (f & _O_EXCL) != 0 ? FILE_CREATE : (f & _O_TRUNC) != 0 ? FILE_OVERWRITE_IF : FILE_OPEN_IF;
  } else if ((f & _O_TRUNC) != 0) {
    disposition = FILE_OVERWRITE;
  }
  const bool readOnly = (f & (_O_WRONLY | _O_RDWR)) == 0 && disposition == FILE_OPEN;
  // A directory opens read-only as on POSIX (the caller's fstat then says what it is); for writing it is EISDIR.
  ULONG options = FILE_OPEN_REPARSE_POINT | (readOnly ? 0 : FILE_NON_DIRECTORY_FILE);
  HANDLE h = nullptr;
  int err = win::OpenRelative(dir, name, access, disposition, options, &h);
  if (err == 0) {
    win::Facts facts;
    err = win::FactsOf(h, &facts);
    if (err == 0 && (facts.mode & 0170000) == win::kModeLink) err = ELOOP;
    if (err != 0) CloseHandle(h);
  }
  int fd = -1;
  if (err == 0) err = win::FdOfHandle(h, &fd);
  if (err != 0) {
    js::ThrowErrno(env, err, "openat", err == ELOOP ? "a link (reparse point) is not followed" : Detail("NtCreateFile").c_str());
    return env.Undefined();
  }
  return Napi::Number::New(env, fd);
}

Napi::Value FsTypeFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = 0;
  if (!FdArg(info, 0, "fd", &fd)) return env.Undefined();
  FsType type;
  int err = FsTypeOfFd(fd, &type);
  if (err != 0) {
    js::ThrowErrno(env, err, "GetVolumeInformationByHandleW", nullptr);
    return env.Undefined();
  }
  return js::FsTypeValue(env, type);
}

// FILE_RENAME_INFORMATION and FILE_DISPOSITION_INFORMATION(_EX)
// (learn.microsoft.com/windows-hardware/drivers/ddi/ntifs/ns-ntifs-_file_rename_information,
// …/ns-ntddk-_file_disposition_information_ex), declared here as mingw's
// winternl.h leaves them out.
struct RenameInformation {
  BOOLEAN ReplaceIfExists;
  HANDLE RootDirectory;
  ULONG FileNameLength;
  WCHAR FileName[1];
};
constexpr int kFileRenameInformation = 10;
constexpr int kFileDispositionInformation = 13;
constexpr int kFileDispositionInformationEx = 64;
constexpr ULONG kDispositionDelete = 0x1, kDispositionPosixSemantics = 0x2;

NTSTATUS SetInformation(HANDLE h, void* data, ULONG len, int cls) {
  IO_STATUS_BLOCK io;
  return NtSetInformationFile(h, &io, data, len, static_cast<FILE_INFORMATION_CLASS>(cls));
}

// renameAt(dirfd, from, to): the entry `from` renamed to `to` in the same
// directory, replacing `to` (as rename(2) does). Atomic on NTFS.
Napi::Value RenameAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  HANDLE dir = nullptr;
  std::wstring from, to;
  if (!DirArg(info, 0, &dir) || !NameArg(info, 1, &from) || !NameArg(info, 2, &to)) return env.Undefined();
  HANDLE h = nullptr;
  int err = win::OpenRelative(dir, from, DELETE, FILE_OPEN, FILE_OPEN_REPARSE_POINT, &h);
  if (err == 0) {
    std::string buf(sizeof(RenameInformation) + to.size() * sizeof(WCHAR), '\0');
    auto* ri = reinterpret_cast<RenameInformation*>(&buf[0]);
    ri->ReplaceIfExists = TRUE;
    ri->RootDirectory = dir;
    ri->FileNameLength = static_cast<ULONG>(to.size() * sizeof(WCHAR));
    memcpy(ri->FileName, to.data(), ri->FileNameLength);
    NTSTATUS st = SetInformation(h, ri, static_cast<ULONG>(buf.size()), kFileRenameInformation);
    if (st < 0) err = win::ErrnoOfStatus(st);
    CloseHandle(h);
  }
  if (err != 0) js::ThrowErrno(env, err, "renameat", Detail("NtSetInformationFile").c_str());
  return env.Undefined();
}

// unlinkAt(dirfd, name) -> true when removed, false when nothing was there.
// Never a directory. POSIX semantics where the filesystem offers them (the
// name goes at once, even while others hold the file open); elsewhere the
// classic delete, whose name stays until the last handle closes.
Napi::Value UnlinkAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  HANDLE dir = nullptr;
  std::wstring name;
  if (!DirArg(info, 0, &dir) || !NameArg(info, 1, &name)) return env.Undefined();
  HANDLE h = nullptr;
  int err = win::OpenRelative(dir, name, DELETE, FILE_OPEN, FILE_OPEN_REPARSE_POINT | FILE_NON_DIRECTORY_FILE, &h);
  if (err == ENOENT) return Napi::Boolean::New(env, false);
  if (err == 0) {
    ULONG ex = kDispositionDelete | kDispositionPosixSemantics;
    NTSTATUS st = SetInformation(h, &ex, sizeof ex, kFileDispositionInformationEx);
    if (st < 0) {
      BOOLEAN del = TRUE;
      st = SetInformation(h, &del, sizeof del, kFileDispositionInformation);
    }
    if (st < 0) err = win::ErrnoOfStatus(st);
    CloseHandle(h);
  }
  if (err == 0) return Napi::Boolean::New(env, true);
  js::ThrowErrno(env, err, "unlinkat", Detail("NtSetInformationFile").c_str());
  return env.Undefined();
}

// identityAt(dirfd, name) -> [dev, ino] (volume serial number, file index:
// what Node's fs.fstat reports on Windows), or null when nothing is there.
Napi::Value IdentityAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  HANDLE dir = nullptr;
  std::wstring name;
  if (!DirArg(info, 0, &dir) || !NameArg(info, 1, &name)) return env.Undefined();
  HANDLE h = nullptr;
  int err = win::OpenRelative(dir, name, FILE_READ_ATTRIBUTES, FILE_OPEN, FILE_OPEN_REPARSE_POINT, &h);
  if (err == ENOENT) return env.Null();
  win::Facts facts;
  if (err == 0) {
    err = win::FactsOf(h, &facts);
    CloseHandle(h);
  }
  if (err != 0) {
    js::ThrowErrno(env, err, "fstatat", Detail("NtCreateFile").c_str());
    return env.Undefined();
  }
  Napi::Array pair = Napi::Array::New(env, 2);
  pair.Set(0u, Napi::BigInt::New(env, facts.dev));
  pair.Set(1u, Napi::BigInt::New(env, facts.ino));
  return pair;
}

// closeFd(fd): closes a descriptor of Node's C runtime (uv_fs_close). EBADF
// (already closed) is not an error for the caller.
Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = 0;
  if (!FdArg(info, 0, "fd", &fd)) return env.Undefined();
  int err = win::CloseFd(env, fd);
  if (err != 0 && err != EBADF) js::ThrowErrno(env, err, "close", nullptr);
  return env.Undefined();
}

}  // namespace

void RegisterDirFd(Napi::Env env, Napi::Object exports) {
  exports.Set("openDirNoFollow", Napi::Function::New(env, OpenDirNoFollow, "openDirNoFollow"));
  exports.Set("openAt", Napi::Function::New(env, OpenAt, "openAt"));
  exports.Set("fsTypeFd", Napi::Function::New(env, FsTypeFd, "fsTypeFd"));
  exports.Set("renameAt", Napi::Function::New(env, RenameAt, "renameAt"));
  exports.Set("unlinkAt", Napi::Function::New(env, UnlinkAt, "unlinkAt"));
  exports.Set("identityAt", Napi::Function::New(env, IdentityAt, "identityAt"));
  exports.Set("closeFd", Napi::Function::New(env, CloseFd, "closeFd"));
}

}  // namespace rw
