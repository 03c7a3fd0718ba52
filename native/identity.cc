// runwarden native seam: the identities of many files in one crossing.
//
// A fact, not a decision: for each path, lstat(2)'s device, inode, size and
// mtime (or the errno that kept lstat from answering), written into a
// Float64Array. What counts as "changed" is decided in TypeScript
// (src/kernel/identity.ts compares; src/live/engine.ts decides what to do).
//
// Why native: the live engine's safety re-check looks at two files of every
// run it follows, every 30 s. At 100,000 runs, Node's lstatSync cost about
// 9 µs of JavaScript per file on top of the system call (a Stats object,
// BigInts, a string to compare); here a file costs the system call and one
// string copy, and nothing is allocated.

#include <napi.h>

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "addon_js.h"

namespace rw {
namespace {

// Slots per path in `out`, in this order. Exported as fileIdentityStride.
enum Slot { kErrno = 0, kDev, kIno, kSize, kMtimeSec, kMtimeNsec, kStride };

// fileIdentities(paths: (string | Buffer)[], out: Float64Array) -> undefined.
// out[i * stride ...] receives path i's slots; a path lstat could not answer
// has its errno in the first slot and zeros elsewhere (ENOENT is the common,
// expected case: most runs have no state.json). Symlinks are not followed.
Napi::Value FileIdentities(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 2 || !info[0].IsArray() || !info[1].IsTypedArray() ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    js::ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "fileIdentities(paths: (string | Buffer)[], out: Float64Array)");
    return env.Undefined();
  }
  Napi::Array paths = info[0].As<Napi::Array>();
  Napi::Float64Array out = info[1].As<Napi::Float64Array>();
  const uint32_t n = paths.Length();
  if (out.ElementLength() < static_cast<size_t>(n) * kStride) {
    js::ThrowUsage(env, "ERR_OUT_OF_RANGE", "out is shorter than paths.length * fileIdentityStride");
    return env.Undefined();
  }
  double* o = out.Data();
  char path[PATH_MAX + 1];
  for (uint32_t i = 0; i < n; i++, o += kStride) {
    napi_value v;
    if (napi_get_element(env, paths, i, &v) != napi_ok || !js::PathArg(env, v, path)) return env.Undefined();
    struct stat st;
    if (lstat(path, &st) != 0) {
      o[kErrno] = errno;
      for (int k = 1; k < kStride; k++) o[k] = 0;
      continue;
    }
    o[kErrno] = 0;
    // dev_t and ino_t fit a double's 53 bits on every kernel we target.
    o[kDev] = static_cast<double>(st.st_dev);
    o[kIno] = static_cast<double>(st.st_ino);
    o[kSize] = static_cast<double>(st.st_size);
#ifdef __APPLE__
    o[kMtimeSec] = static_cast<double>(st.st_mtimespec.tv_sec);
    o[kMtimeNsec] = static_cast<double>(st.st_mtimespec.tv_nsec);
#else
    o[kMtimeSec] = static_cast<double>(st.st_mtim.tv_sec);
    o[kMtimeNsec] = static_cast<double>(st.st_mtim.tv_nsec);
#endif
  }
  return env.Undefined();
}

}  // namespace

void RegisterIdentity(Napi::Env env, Napi::Object exports) {
  exports.Set("fileIdentities", Napi::Function::New(env, FileIdentities, "fileIdentities"));
  exports.Set("fileIdentityStride", Napi::Number::New(env, kStride));
}

}  // namespace rw
