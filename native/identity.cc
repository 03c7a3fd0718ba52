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
// BigInts, a string to compare); here a file costs the system call, and
// nothing is allocated on either side.

#include <napi.h>

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "addon_js.h"
#include "platform.h"

namespace rw {
namespace {

// Slots per path in `out`, in this order. Exported as fileIdentityStride.
enum Slot { kErrno = 0, kDev, kIno, kSize, kMtimeSec, kMtimeNsec, kStride };

// fileIdentities(dirs: string[], names: string[], out: Float64Array) -> undefined.
// For each directory i and each name j, the entry `dirs[i]/names[j]`:
// out[(i * names.length + j) * stride ...] receives its slots. A file lstat
// could not answer has its errno in the first slot and zeros elsewhere
// (ENOENT is the common, expected case: most runs have no state.json).
// Symlinks are not followed. The paths are joined here, so a caller that
// asks for the same names in many directories makes no string per file.
Napi::Value FileIdentities(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 3 || !info[0].IsArray() || !info[1].IsArray() || !info[2].IsTypedArray() ||
      info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    js::ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "fileIdentities(dirs: string[], names: string[], out: Float64Array)");
    return env.Undefined();
  }
  Napi::Array dirs = info[0].As<Napi::Array>();
  Napi::Array names = info[1].As<Napi::Array>();
  Napi::Float64Array out = info[2].As<Napi::Float64Array>();
  const uint32_t nd = dirs.Length();
  const uint32_t nn = names.Length();
  if (nn == 0 || nn > 8) {
    js::ThrowUsage(env, "ERR_OUT_OF_RANGE", "names must hold 1 to 8 entry names");
    return env.Undefined();
  }
  if (out.ElementLength() < static_cast<size_t>(nd) * nn * kStride) {
    js::ThrowUsage(env, "ERR_OUT_OF_RANGE", "out is shorter than dirs.length * names.length * fileIdentityStride");
    return env.Undefined();
  }
  // The names, checked once: one directory entry each.
  char name[8][NAME_MAX + 1];
  size_t name_len[8];
  for (uint32_t j = 0; j < nn; j++) {
    napi_value v;
    size_t len = 0;
    if (napi_get_element(env, names, j, &v) != napi_ok ||
        napi_get_value_string_utf8(env, v, name[j], sizeof name[j], &len) != napi_ok || len == 0 || len >= NAME_MAX ||
        strchr(name[j], '/') != nullptr || strlen(name[j]) != len) {
      js::ThrowUsage(env, "ERR_INVALID_ARG_VALUE", "each name must be one directory entry");
      return env.Undefined();
    }
    name_len[j] = len;
  }
  double* o = out.Data();
  char path[PATH_MAX + 1];
  for (uint32_t i = 0; i < nd; i++) {
    napi_value v;
    if (napi_get_element(env, dirs, i, &v) != napi_ok || !js::PathArg(env, v, path)) return env.Undefined();
    const size_t dl = strlen(path);
    for (uint32_t j = 0; j < nn; j++, o += kStride) {
      struct stat st;
      int err = 0;
      if (dl + 1 + name_len[j] > PATH_MAX) {
        err = ENAMETOOLONG;
      } else {
        path[dl] = '/';
        memcpy(path + dl + 1, name[j], name_len[j] + 1);
        if (lstat(path, &st) != 0) err = errno;
        path[dl] = '\0';
      }
      if (err != 0) {
        o[kErrno] = err;
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
  }
  return env.Undefined();
}

// openFilesOnDevice(dev, exceptPid, ino, writers, name) -> {files: [{pid, ino, write, path}], unreadable: [pid]}.
// Which processes hold which files of one device open (platform.h
// OpenFilesOnDevice: darwin's libproc census), a fact for the holder rules
// in src/kernel/holders.ts, kept by the query (platform.h OpenFileQuery:
// `ino` 0 for any, `writers` a boolean, `name` a Buffer, empty for any) so
// that only what the caller asks about crosses into JavaScript. `path` is a
// Buffer (the kernel's bytes; empty unless a name was asked). Throws ENOSYS
// where the system has no such census (linux: /proc is read instead).
Napi::Value OpenFilesOnDeviceJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t dev = 0, except = 0, ino = 0;
  if (info.Length() != 5 || !js::IntArg(env, info[0], "dev", &dev) || !js::IntArg(env, info[1], "exceptPid", &except) || !js::IntArg(env, info[2], "ino", &ino)) return env.Undefined();
  if (!info[3].IsBoolean() || !info[4].IsBuffer()) {
    Napi::TypeError::New(env, "openFilesOnDevice(dev, exceptPid, ino, writers, name): writers must be a boolean and name a Buffer").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  OpenFileQuery query;
  query.ino = static_cast<uint64_t>(ino);
  query.writers = info[3].As<Napi::Boolean>().Value();
  Napi::Buffer<char> name = info[4].As<Napi::Buffer<char>>();
  query.name.assign(name.Data(), name.Length());
  std::vector<OpenFile> files;
  std::vector<int> unreadable;
  int err = OpenFilesOnDevice(static_cast<uint64_t>(dev), static_cast<int>(except), query, &files, &unreadable);
  if (err != 0) {
    js::ThrowErrno(env, err, "openFilesOnDevice", nullptr);
    return env.Undefined();
  }
  Napi::Array list = Napi::Array::New(env, files.size());
  for (size_t i = 0; i < files.size(); i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("pid", Napi::Number::New(env, files[i].pid));
    o.Set("ino", Napi::Number::New(env, static_cast<double>(files[i].ino)));
    o.Set("write", Napi::Boolean::New(env, files[i].write));
    o.Set("path", Napi::Buffer<char>::Copy(env, files[i].path.data(), files[i].path.size()));
    list.Set(static_cast<uint32_t>(i), o);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("files", list);
  Napi::Array pids = Napi::Array::New(env, unreadable.size());
  for (size_t i = 0; i < unreadable.size(); i++) pids.Set(static_cast<uint32_t>(i), Napi::Number::New(env, unreadable[i]));
  result.Set("unreadable", pids);
  return result;
}

}  // namespace

// Registers the identity calls, and the system's facts TypeScript decides by
// instead of the platform's name (platform.h kHasProcFs, kHolderTable,
// kLockPrimitive, kOneLockList) with
// the census behind `holderTable: "libproc"`.
void RegisterIdentity(Napi::Env env, Napi::Object exports) {
  exports.Set("fileIdentities", Napi::Function::New(env, FileIdentities, "fileIdentities"));
  exports.Set("fileIdentityStride", Napi::Number::New(env, kStride));
  Napi::Object system = Napi::Object::New(env);
  system.Set("procfs", Napi::Boolean::New(env, kHasProcFs));
  system.Set("holderTable", Napi::String::New(env, kHolderTable));
  system.Set("lock", Napi::String::New(env, kLockPrimitive));
  system.Set("oneLockList", Napi::Boolean::New(env, kOneLockList));
  system.Freeze();
  exports.Set("system", system);
  exports.Set("openFilesOnDevice", Napi::Function::New(env, OpenFilesOnDeviceJs, "openFilesOnDevice"));
}

}  // namespace rw
