// runwarden native, Windows: the identities of many files in one crossing
// (the counterpart of native/identity.cc, same slots), and the system's facts.
// A file's identity is what Node's fs.lstat reports on Windows: the volume
// serial number, the file index, the size and the last write time.
#include <napi.h>

#include <errno.h>
#include <string.h>

#include <string>

#include "../addon_js.h"
#include "../platform.h"
#include "win.h"

namespace rw {
namespace {

enum Slot { kErrno = 0, kDev, kIno, kSize, kMtimeSec, kMtimeNsec, kStride };

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
  std::string name[8];
  for (uint32_t j = 0; j < nn; j++) {
    Napi::Value v = names[j];
    if (!v.IsString()) {
      js::ThrowUsage(env, "ERR_INVALID_ARG_VALUE", "each name must be one directory entry");
      return env.Undefined();
    }
    name[j] = v.As<Napi::String>().Utf8Value();
    if (!win::IsEntryName(name[j].c_str()) || name[j].size() != strlen(name[j].c_str())) {
      js::ThrowUsage(env, "ERR_INVALID_ARG_VALUE", "each name must be one directory entry");
      return env.Undefined();
    }
  }
  double* o = out.Data();
  char dir[RW_PATH_MAX + 1];
  for (uint32_t i = 0; i < nd; i++) {
    napi_value v;
    if (napi_get_element(env, dirs, i, &v) != napi_ok || !js::PathArg(env, v, dir)) return env.Undefined();
    for (uint32_t j = 0; j < nn; j++, o += kStride) {
      std::string path = std::string(dir) + "\\" + name[j];
      std::wstring wide;
      int err = path.size() > RW_PATH_MAX ? ENAMETOOLONG : win::WidePath(path.c_str(), &wide);
      win::Facts f;
      if (err == 0) {
        // lstat: the entry itself, a link not followed.
        HANDLE h = CreateFileW(wide.c_str(), FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                               OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
        if (h == INVALID_HANDLE_VALUE) {
          err = win::ErrnoOfWin32(GetLastError());
        } else {
          err = win::FactsOf(h, &f);
          CloseHandle(h);
        }
      }
      if (err != 0) {
        o[kErrno] = err;
        for (int k = 1; k < kStride; k++) o[k] = 0;
        continue;
      }
      // Seconds and nanoseconds since 1970, split as libuv splits them.
      const int64_t since1970 = f.mtime - 116444736000000000LL;
      int64_t sec = since1970 / 10000000, rem = since1970 % 10000000;
      if (rem < 0) {
        rem += 10000000;
        sec -= 1;
      }
      o[kErrno] = 0;
      o[kDev] = static_cast<double>(f.dev);
      o[kIno] = static_cast<double>(f.ino);
      o[kSize] = static_cast<double>(f.size);
      o[kMtimeSec] = static_cast<double>(sec);
      o[kMtimeNsec] = static_cast<double>(rem * 100);
    }
  }
  return env.Undefined();
}

// No census of other processes' open files is taken on Windows.
Napi::Value OpenFilesOnDeviceJs(const Napi::CallbackInfo& info) {
  js::ThrowErrno(info.Env(), ENOSYS, "openFilesOnDevice", nullptr);
  return info.Env().Undefined();
}

}  // namespace

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
