// runwarden native: the N-API surface of reading a run directory's files in
// one crossing (runfiles.h), common to every platform: the handle, the
// layout, the argument checks and the sorted listing's JavaScript form.
#include <napi.h>

#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "addon_js.h"
#include "runfiles.h"

namespace rw {
namespace runfiles {

RunFiles* Handle(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsExternal()) {
    js::ThrowUsage(info.Env(), "ERR_INVALID_ARG_TYPE", "the first argument must be the handle runFilesSetup returned");
    return nullptr;
  }
  return info[0].As<Napi::External<RunFiles>>().Data();
}

// Which files to read: bit 0 the stream, bit 1 the snapshot.
bool WantArg(const Napi::CallbackInfo& info, size_t i, int* want) {
  int64_t v = 0;
  if (info.Length() <= i || !js::IntArg(info.Env(), info[i], "want", &v)) return false;
  if (v < 0 || v > 3) {
    js::ThrowUsage(info.Env(), "ERR_OUT_OF_RANGE", "want must be from 0 to 3");
    return false;
  }
  *want = static_cast<int>(v);
  return true;
}

void NotAsked(RunFiles* rf, int which) {
  double* o = rf->out + kFileBase + which * kFileSlots;
  for (int i = 0; i < kFileSlots; i++) o[i] = 0;
  o[kSlot_fd] = -1;
}

Napi::Value SortedNames(Napi::Env env, const std::string& bytes, std::vector<size_t>& start, const std::vector<char>& kind) {
  const size_t n = start.size();
  start.push_back(bytes.size());
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; i++) order[i] = static_cast<uint32_t>(i);
  const char* base = bytes.data();
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const size_t la = start[a + 1] - start[a], lb = start[b + 1] - start[b];
    const int c = memcmp(base + start[a], base + start[b], la < lb ? la : lb);
    return c != 0 ? c < 0 : la < lb;
  });
  Napi::Array names = Napi::Array::New(env, n);
  std::string kinds(n, '?');
  for (size_t i = 0; i < n; i++) {
    const uint32_t k = order[i];
    napi_value s;
    napi_create_string_latin1(env, base + start[k], start[k + 1] - start[k], &s);
    names.Set(static_cast<uint32_t>(i), Napi::Value(env, s));
    kinds[i] = kind[k];
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("names", names);
  result.Set("kinds", Napi::String::New(env, kinds));
  return result;
}

namespace {

// runFilesSetup(events, state, tail: Buffer, snapshot: Buffer, out: Float64Array) -> handle.
// The names are the two entries read; the buffers receive their bytes; `out`
// (at least runFilesLayout.outLength slots) the facts. Kept, per handle, for
// the life of the handle.
Napi::Value Setup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 5 || !info[0].IsString() || !info[1].IsString() || !info[2].IsBuffer() || !info[3].IsBuffer() ||
      !info[4].IsTypedArray() || info[4].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    js::ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "runFilesSetup(events: string, state: string, tail: Buffer, snapshot: Buffer, out: Float64Array)");
    return env.Undefined();
  }
  Napi::Float64Array out = info[4].As<Napi::Float64Array>();
  if (out.ElementLength() < kOutLength) {
    js::ThrowUsage(env, "ERR_OUT_OF_RANGE", "out is shorter than runFilesLayout.outLength");
    return env.Undefined();
  }
  RunFiles* rf = new RunFiles();
  for (int w = 0; w < kFiles; w++) {
    rf->name[w] = info[w].As<Napi::String>().Utf8Value();
    if (rf->name[w].empty() || rf->name[w].find('/') != std::string::npos || rf->name[w] == "." || rf->name[w] == "..") {
      delete rf;
      js::ThrowUsage(env, "ERR_INVALID_ARG_VALUE", "each name must be one directory entry");
      return env.Undefined();
    }
    Napi::Buffer<uint8_t> b = info[2 + w].As<Napi::Buffer<uint8_t>>();
    rf->buf_ref[w] = Napi::Persistent(b);
    rf->buf[w] = b.Data();
    rf->len[w] = b.Length();
  }
  rf->out_ref = Napi::Persistent(out);
  rf->out = out.Data();
  return Napi::External<RunFiles>::New(env, rf, [](Napi::Env, RunFiles* p) { delete p; });
}

// The layout TypeScript reads the facts by: slot and status numbers by name.
Napi::Object Layout(Napi::Env env) {
  Napi::Object layout = Napi::Object::New(env);
  Napi::Object slot = Napi::Object::New(env);
#define RW_X(name) slot.Set(#name, Napi::Number::New(env, kSlot_##name));
  RW_RUNFILE_SLOTS(RW_X)
#undef RW_X
  Napi::Object status = Napi::Object::New(env);
#define RW_X(name, v) status.Set(#name, Napi::Number::New(env, v));
  RW_RUNFILE_STATUS(RW_X)
#undef RW_X
  layout.Set("slot", slot);
  layout.Set("status", status);
  layout.Set("fileSlots", Napi::Number::New(env, kFileSlots));
  layout.Set("fileBase", Napi::Number::New(env, kFileBase));
  layout.Set("dirErrno", Napi::Number::New(env, kDirErrno));
  layout.Set("dirFd", Napi::Number::New(env, kDirFd));
  layout.Set("outLength", Napi::Number::New(env, static_cast<double>(kOutLength)));
  layout.Freeze();
  slot.Freeze();
  status.Freeze();
  return layout;
}

}  // namespace
}  // namespace runfiles

void RegisterRunFiles(Napi::Env env, Napi::Object exports) {
  exports.Set("runFilesSetup", Napi::Function::New(env, runfiles::Setup, "runFilesSetup"));
  exports.Set("runFiles", Napi::Function::New(env, runfiles::Read, "runFiles"));
  exports.Set("runFilesLayout", runfiles::Layout(env));
  exports.Set("readDirSorted", Napi::Function::New(env, runfiles::ReadDirSorted, "readDirSorted"));
}

}  // namespace rw
