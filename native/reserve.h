// runwarden native: keeping disk space for a leg's closing events (reserve.cc).
//
// Declared here so addon.cc only registers the function. The addon hands its
// error constructors in as the function's data, so errors thrown from here
// are the same NativeError (.code, .errno, .syscall) as everywhere else.
#ifndef RUNWARDEN_RESERVE_H_
#define RUNWARDEN_RESERVE_H_

#include <napi.h>

namespace rw {

// The addon's two ways to throw (addon.cc ThrowErrno / ThrowUsage).
struct Throwers {
  void (*errno_error)(Napi::Env env, int err, const char* syscall, const char* detail);
  void (*usage_error)(Napi::Env env, const char* code, const char* msg);
};

// reserveSpace(fd, offset, length) -> "reserved" | "unsupported" | "ENOSPC" | "EDQUOT".
// info.Data() must point at a Throwers that lives as long as the addon.
Napi::Value ReserveSpace(const Napi::CallbackInfo& info);

}  // namespace rw

#endif  // RUNWARDEN_RESERVE_H_
