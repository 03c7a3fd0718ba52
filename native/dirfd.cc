// runwarden native: opening under a run directory by descriptor.
//
// Every read and write under a runs root goes through a descriptor of the
// run directory opened without following a link at its last component, and
// each file is then opened relative to it (openat), again without following
// a link. A run directory renamed, swapped for a symlink (renameat2 with
// RENAME_EXCHANGE) or replaced after it was opened cannot redirect a read
// or a write outside the root: the descriptor names the directory that was
// checked, not whatever holds its name now.
//
// Names are bytes: a Buffer argument reaches the kernel byte for byte, so a
// name that is not valid UTF-8 is opened by its exact name.
//
// Plain POSIX (open, openat, O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC exist on
// linux and darwin alike); fstatfs is behind the platform seam. Expected
// answers are values; failures throw the registered error class with .code,
// .errno and .syscall. Nothing here decides what a fact means.
#include <napi.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "addon_js.h"
#include "platform.h"

namespace rw {
namespace {

// Argument i as a descriptor (>= 0).
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

// One entry of a directory: not empty, no '/', not "." or "..", so openat
// can reach nothing but a direct child of the descriptor's directory.
bool NameArg(const Napi::CallbackInfo& info, size_t i, char (&name)[PATH_MAX + 1]) {
  if (info.Length() <= i) {
    js::ThrowUsage(info.Env(), "ERR_INVALID_ARG_TYPE", "name must be a string or a Buffer");
    return false;
  }
  if (!js::PathArg(info.Env(), info[i], name)) return false;
  if (name[0] == '\0' || strchr(name, '/') != nullptr || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
    js::ThrowUsage(info.Env(), "ERR_INVALID_ARG_VALUE", "name must be one directory entry: not empty, no '/', not '.' or '..'");
    return false;
  }
  return true;
}

int OpenRetry(int dirfd, const char* path, int flags, mode_t mode) {
  int fd;
  do {
    fd = dirfd < 0 ? open(path, flags, mode) : openat(dirfd, path, flags, mode);
  } while (fd < 0 && errno == EINTR);
  return fd < 0 ? -errno : fd;
}

// openDirNoFollow(path) -> fd: open(path, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
// O_CLOEXEC). A symlink at the last component fails (ELOOP, or ENOTDIR on
// some kernels), as does anything that is not a directory. Links in the
// components above are followed: they are the caller's choice of root.
Napi::Value OpenDirNoFollow(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  char path[PATH_MAX + 1];
  if (info.Length() < 1 || !js::PathArg(env, info[0], path)) return env.Undefined();
  int fd = OpenRetry(-1, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) {
    js::ThrowErrno(env, -fd, "open", nullptr);
    return env.Undefined();
  }
  return Napi::Number::New(env, fd);
}

// openAt(dirfd, name, flags[, mode]) -> fd: openat(dirfd, name, flags |
// O_NOFOLLOW | O_CLOEXEC, mode). `flags` are the OS's own numbers (Node's
// fs.constants); O_NOFOLLOW and O_CLOEXEC are always added, whatever the
// caller passed, so no caller can open through a link or leak the descriptor
// into a child. `mode` (default 0600) applies only with O_CREAT.
Napi::Value OpenAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int dirfd = 0;
  char name[PATH_MAX + 1];
  int64_t flags = 0, mode = 0600;
  if (!FdArg(info, 0, "dirfd", &dirfd) || !NameArg(info, 1, name)) return env.Undefined();
  if (info.Length() < 3 || !js::IntArg(env, info[2], "flags", &flags)) return env.Undefined();
  if (info.Length() >= 4 && !info[3].IsUndefined() && !js::IntArg(env, info[3], "mode", &mode)) return env.Undefined();
  if (mode < 0 || mode > 07777) {
    js::ThrowUsage(env, "ERR_OUT_OF_RANGE", "mode must be from 0 to 0o7777");
    return env.Undefined();
  }
  int fd = OpenRetry(dirfd, name, static_cast<int>(flags) | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) {
    js::ThrowErrno(env, -fd, "openat", nullptr);
    return env.Undefined();
  }
  return Napi::Number::New(env, fd);
}

// fsTypeFd(fd): fstatfs of an open descriptor, the platform's way (as fsType).
Napi::Value FsTypeFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = 0;
  if (!FdArg(info, 0, "fd", &fd)) return env.Undefined();
  FsType type;
  int err = FsTypeOfFd(fd, &type);
  if (err != 0) {
    js::ThrowErrno(env, err, "fstatfs", nullptr);
    return env.Undefined();
  }
  return js::FsTypeValue(env, type);
}

// renameAt(dirfd, from, to): renameat(2) of two entries of one directory
// (as rename(2): atomic, replacing `to`). Throws NativeError.
Napi::Value RenameAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int dirfd = 0;
  char from[PATH_MAX + 1], to[PATH_MAX + 1];
  if (!FdArg(info, 0, "dirfd", &dirfd) || !NameArg(info, 1, from) || !NameArg(info, 2, to)) return env.Undefined();
  if (renameat(dirfd, from, dirfd, to) != 0) {
    js::ThrowErrno(env, errno, "renameat", nullptr);
    return env.Undefined();
  }
  return env.Undefined();
}

// unlinkAt(dirfd, name) -> true when removed, false when nothing was there
// (ENOENT). Never removes a directory. Throws NativeError otherwise.
Napi::Value UnlinkAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int dirfd = 0;
  char name[PATH_MAX + 1];
  if (!FdArg(info, 0, "dirfd", &dirfd) || !NameArg(info, 1, name)) return env.Undefined();
  if (unlinkat(dirfd, name, 0) == 0) return Napi::Boolean::New(env, true);
  if (errno == ENOENT) return Napi::Boolean::New(env, false);
  js::ThrowErrno(env, errno, "unlinkat", nullptr);
  return env.Undefined();
}

// identityAt(dirfd, name) -> [dev, ino] as BigInts, or null when nothing is
// there (ENOENT): fstatat(2) with AT_SYMLINK_NOFOLLOW, so it names the entry
// itself. Throws NativeError otherwise.
Napi::Value IdentityAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int dirfd = 0;
  char name[PATH_MAX + 1];
  if (!FdArg(info, 0, "dirfd", &dirfd) || !NameArg(info, 1, name)) return env.Undefined();
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return env.Null();
    js::ThrowErrno(env, errno, "fstatat", nullptr);
    return env.Undefined();
  }
  Napi::Array pair = Napi::Array::New(env, 2);
  pair.Set(0u, Napi::BigInt::New(env, static_cast<uint64_t>(st.st_dev)));
  pair.Set(1u, Napi::BigInt::New(env, static_cast<uint64_t>(st.st_ino)));
  return pair;
}

// closeFd(fd) -> undefined: close(2) of a descriptor this addon opened.
// Closing it here rather than with fs.closeSync keeps Node's worker threads
// quiet: they warn when fs closes a descriptor fs did not open. EINTR still
// releases the descriptor on linux, so it is not retried; EBADF (already
// closed) is not an error for the caller either. Anything else throws.
Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = 0;
  if (!FdArg(info, 0, "fd", &fd)) return env.Undefined();
  if (close(fd) != 0 && errno != EINTR && errno != EBADF) js::ThrowErrno(env, errno, "close", nullptr);
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
