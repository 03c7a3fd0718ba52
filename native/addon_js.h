// runwarden native: the argument and error helpers of addon.cc, for the
// other files that define N-API functions (dirfd.cc). Same behaviour as in
// addon.cc: a bad argument throws a Node-style code before any system call;
// a failed system call throws the registered error class with .code (the
// errno name), .errno and .syscall.
#ifndef RUNWARDEN_ADDON_JS_H_
#define RUNWARDEN_ADDON_JS_H_

#include <napi.h>

#include <limits.h>
#include <stdint.h>

#include "platform.h"

namespace rw {
namespace js {
void ThrowErrno(Napi::Env env, int err, const char* syscall, const char* detail);
void ThrowUsage(Napi::Env env, const char* code, const char* msg);
// A string (UTF-8) or a Buffer (its bytes, exactly); no NUL, shorter than RW_PATH_MAX.
bool PathArg(Napi::Env env, napi_value v, char (&buf)[RW_PATH_MAX + 1]);
bool IntArg(Napi::Env env, const Napi::Value& v, const char* name, int64_t* out);
Napi::Value FsTypeValue(Napi::Env env, const FsType& type);
}  // namespace js

// Adds dirfd.cc's functions to the addon's exports (called by addon.cc).
void RegisterDirFd(Napi::Env env, Napi::Object exports);
// Adds runfiles.cc's functions (a run directory's files in one crossing).
void RegisterRunFiles(Napi::Env env, Napi::Object exports);
// Adds identity.cc's fileIdentities (many files' lstat identities in one crossing).
void RegisterIdentity(Napi::Env env, Napi::Object exports);
}  // namespace rw

#endif  // RUNWARDEN_ADDON_JS_H_
