// runwarden native seam: the kernel facts, and nothing that decides.
//
// This file is the N-API surface, common to every platform: it checks
// arguments, builds errors, and exports the functions and the constants
// TypeScript reads (src/kernel/native.ts is the only caller). The system
// calls that differ between kernels are behind platform.h, one file per
// platform chosen by binding.gyp; the probe's syscall sequence is probe.cc.
//
// Every function answers one question the kernel can answer exactly and
// returns the answer as a plain value. Expected outcomes (a lock granted or
// contended, a pid gone) are values, never exceptions, so the hot path of a
// probe costs no throw. Only genuine failures throw, and they throw an
// instance of the one error class the TypeScript side handed to init(), so
// every native error carries a stable .code (errno name), .errno and .syscall.
// A bad argument throws too, with a Node-style code (ERR_INVALID_ARG_TYPE,
// ERR_OUT_OF_RANGE, ...), before any system call.
//
// State kept between calls (the error class, the probe's reused buffers) is
// per Node environment (N-API instance data), so worker threads each get their
// own and never touch another environment's references.
//
// Policy (what a fact means for a run) lives in src/, never here.

#include <napi.h>

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <string>

#include "addon_js.h"
#include "errno_name.h"
#include "facts.h"
#include "notify.h"
#include "platform.h"
#include "reserve.h"
#include "scan.h"

namespace {

using rw::FsType;
using rw::LocalTypes;

// The probe's reused buffers and the known-local list, registered once by
// probeSetup(). Registering them once, instead of passing them on every call,
// is what keeps a probe close to its syscalls: each typed-array argument costs
// several V8 type queries per call (napi_get_typedarray_info and friends),
// which measured as ~0.2x of the syscall floor on their own (bench/PROFILE.md).
// The references pin head and out for the life of the environment, so the raw
// pointers below stay valid (an ArrayBuffer's backing store never moves).
struct ProbeState {
  Napi::Reference<Napi::Buffer<uint8_t>> head_ref;
  Napi::Reference<Napi::Float64Array> out_ref;
  rw::ProbeBuffers buffers;
  LocalTypes local_types;
  rw::LocalMounts local_mounts;  // judged under local_types only
};

// Everything the addon keeps between calls, per Node environment (main thread
// or worker), held as N-API instance data so that no reference made in one
// environment is ever used from another.
struct AddonData {
  Napi::FunctionReference error_class;  // set by init()
  ProbeState* probe = nullptr;          // set by probeSetup()
  ~AddonData() { delete probe; }
};

AddonData* Data(Napi::Env env) { return env.GetInstanceData<AddonData>(); }

// ---------------------------------------------------------------------------
// Errors

// Throws an instance of the registered error class (or a plain Error with the
// same fields before init() ran) describing errno `err` from `syscall`.
void ThrowErrno(Napi::Env env, int err, const char* syscall, const char* detail) {
  const char* code = rw::ErrnoName(err);
  std::string msg = std::string(syscall) + " failed: " + code + " (" + strerror(err) + ")";
  if (detail != nullptr && detail[0] != '\0') msg += std::string(", ") + detail;
  Napi::Object obj;
  AddonData* data = Data(env);
  if (data != nullptr && !data->error_class.IsEmpty()) {
    obj = data->error_class.New({Napi::String::New(env, msg), Napi::String::New(env, code),
                                 Napi::Number::New(env, err), Napi::String::New(env, syscall)});
    if (env.IsExceptionPending()) return;
  } else {
    obj = Napi::Error::New(env, msg).Value();
    obj.Set("code", code);
    obj.Set("errno", err);
    obj.Set("syscall", syscall);
  }
  napi_throw(env, obj);
}

// Throws for a bad argument: a Node-style code, no errno, no syscall.
void ThrowUsage(Napi::Env env, const char* code, const char* msg) {
  Napi::Object obj;
  AddonData* data = Data(env);
  if (data != nullptr && !data->error_class.IsEmpty()) {
    obj = data->error_class.New({Napi::String::New(env, msg), Napi::String::New(env, code),
                                 env.Undefined(), env.Undefined()});
    if (env.IsExceptionPending()) return;
  } else {
    obj = Napi::TypeError::New(env, msg).Value();
    obj.Set("code", code);
  }
  napi_throw(env, obj);
}

// ---------------------------------------------------------------------------
// Arguments

// Copies a JS string into a fixed buffer without heap allocation. Returns
// false (with an exception pending) when it is not a string or is too long.
// A Buffer is taken byte for byte, so a name that is not valid UTF-8 reaches
// the kernel exactly as the directory listing gave it (names are bytes).
bool PathArg(Napi::Env env, napi_value v, char (&buf)[RW_PATH_MAX + 1]) {
  size_t len = 0;
  bool is_buffer = false;
  napi_is_buffer(env, v, &is_buffer);
  if (is_buffer) {
    void* data = nullptr;
    napi_get_buffer_info(env, v, &data, &len);
    if (len >= RW_PATH_MAX) {
      ThrowUsage(env, "ENAMETOOLONG", "path is too long");
      return false;
    }
    if (len > 0) memcpy(buf, data, len);
    buf[len] = '\0';
  } else if (napi_get_value_string_utf8(env, v, buf, sizeof buf, &len) != napi_ok) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "path must be a string or a Buffer");
    return false;
  }
  if (len >= RW_PATH_MAX) {
    ThrowUsage(env, "ENAMETOOLONG", "path is too long");
    return false;
  }
  if (strlen(buf) != len) {
    ThrowUsage(env, "ERR_INVALID_ARG_VALUE", "path contains a NUL byte");
    return false;
  }
  return true;
}

bool IntArg(Napi::Env env, const Napi::Value& v, const char* name, int64_t* out) {
  if (!v.IsNumber()) {
    std::string msg = std::string(name) + " must be a number";
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", msg.c_str());
    return false;
  }
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != static_cast<double>(static_cast<int64_t>(d))) {
    std::string msg = std::string(name) + " must be a 32-bit integer";
    ThrowUsage(env, "ERR_OUT_OF_RANGE", msg.c_str());
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

// Reads a known-local list argument into `into`: a Uint32Array of magics
// where the platform names filesystem types by number, an Array of strings
// where it names them by name. False, with an exception pending, when it has
// the wrong shape.
bool LocalTypesArg(Napi::Env env, const Napi::Value& v, LocalTypes* into) {
  into->magics.clear();
  into->names.clear();
  if (rw::kFsTypeIsName) {
    if (!v.IsArray()) {
      ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "localTypes must be an Array of filesystem type names on this platform");
      return false;
    }
    Napi::Array names = v.As<Napi::Array>();
    for (uint32_t i = 0; i < names.Length(); i++) {
      Napi::Value name = names[i];
      if (name.IsString()) into->names.push_back(name.As<Napi::String>().Utf8Value());
    }
    return true;
  }
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "localTypes must be a Uint32Array of filesystem magics on this platform");
    return false;
  }
  Napi::Uint32Array types = v.As<Napi::Uint32Array>();
  for (size_t i = 0; i < types.ElementLength(); i++) into->magics.push_back(types[i]);
  return true;
}

Napi::Value FsTypeValue(Napi::Env env, const FsType& type) {
  if (rw::kFsTypeIsName) return Napi::String::New(env, type.name);
  return Napi::Number::New(env, static_cast<double>(type.magic));
}

// ---------------------------------------------------------------------------
// Exported functions

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "init(ErrorClass) needs a constructor");
    return env.Undefined();
  }
  Data(env)->error_class = Napi::Persistent(info[0].As<Napi::Function>());
  return env.Undefined();
}

// flock(fd, op), op from constants.flockOp. Returns true when granted, false
// when contended; throws otherwise.
Napi::Value Flock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t fd = 0, op = 0;
  if (info.Length() < 2 || !IntArg(env, info[0], "fd", &fd) || !IntArg(env, info[1], "op", &op)) {
    return env.Undefined();
  }
  if (fd < 0) {
    ThrowUsage(env, "ERR_OUT_OF_RANGE", "fd must be >= 0");
    return env.Undefined();
  }
  rw::LockKind kind;
  switch (op) {
#define RW_FLOCK_CASE(name, value) \
  case value:                      \
    kind = rw::LockKind::k##name;  \
    break;
    RW_FLOCK_OPS(RW_FLOCK_CASE)
#undef RW_FLOCK_CASE
    default:
      ThrowUsage(env, "ERR_OUT_OF_RANGE", "op must be one of constants.flockOp (shared, exclusive or unlock)");
      return env.Undefined();
  }
  int r = rw::Flock(static_cast<int>(fd), kind);
  if (r != 0 && r != rw::kContended) {
    ThrowErrno(env, r, "flock", nullptr);
    return env.Undefined();
  }
  return Napi::Boolean::New(env, r == 0);
}

// recordLockHolder(fd, op) -> pid: the process whose record lock (fcntl(2),
// lockf(3)) keeps a flock of kind `op` (constants.flockOp shared or
// exclusive) out of the file open as `fd`, where the two are one list
// (darwin); 0 when a flock does, when nothing does, or where they are apart
// (linux, answered without a system call). Throws NativeError.
Napi::Value RecordLockHolderJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t fd = 0, op = 0;
  if (info.Length() < 2 || !IntArg(env, info[0], "fd", &fd) || !IntArg(env, info[1], "op", &op)) return env.Undefined();
  if (fd < 0) {
    ThrowUsage(env, "ERR_OUT_OF_RANGE", "fd must be >= 0");
    return env.Undefined();
  }
  rw::LockKind kind = rw::LockKind::kUnlock;
  switch (op) {
#define RW_FLOCK_CASE(name, value) \
  case value:                      \
    kind = rw::LockKind::k##name;  \
    break;
    RW_FLOCK_OPS(RW_FLOCK_CASE)
#undef RW_FLOCK_CASE
    default:
      break;
  }
  if (kind == rw::LockKind::kUnlock) {
    ThrowUsage(env, "ERR_OUT_OF_RANGE", "op must be constants.flockOp shared or exclusive");
    return env.Undefined();
  }
  int pid = 0;
  if (rw::kOneLockList) {
    int err = rw::RecordLockHolder(static_cast<int>(fd), kind, &pid);
    if (err != 0) {
      ThrowErrno(env, err, "fcntl", nullptr);
      return env.Undefined();
    }
  }
  return Napi::Number::New(env, pid);
}

// fsType(path): the filesystem type, the platform's way (linux: f_type as an
// unsigned number; darwin: f_fstypename). Throws NativeError.
Napi::Value FsTypeOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  char path[RW_PATH_MAX + 1];
  if (info.Length() < 1 || !PathArg(env, info[0], path)) return env.Undefined();
  FsType type;
  int err = rw::FsTypeOfPath(path, &type);
  if (err != 0) {
    ThrowErrno(env, err, "statfs", path);
    return env.Undefined();
  }
  return FsTypeValue(env, type);
}

// A presence as JavaScript reads it: "gone", "present" or "unknown".
Napi::Value PresenceValue(Napi::Env env, rw::Presence p) {
  return Napi::String::New(env, p == rw::Presence::kGone ? "gone" : p == rw::Presence::kPresent ? "present" : "unknown");
}

// releaseFreeMemory(): the allocator's free memory back to the kernel
// (platform.h ReleaseFreeMemory); true when some was released. Never throws.
Napi::Value ReleaseFreeMemoryJs(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), rw::ReleaseFreeMemory());
}

// descriptorLimit() -> {soft, hard, perProcess?}: this process's descriptor
// limit (platform.h DescriptorLimit: POSIX getrlimit RLIMIT_NOFILE, whose
// getrlimit(2) manual page on linux and darwin documents it as "the maximum
// number of open files for this process"), and where the kernel caps it
// whatever it says, that cap (platform.h MaxFilesPerProcess: darwin
// kern.maxfilesperproc). An unlimited one is answered as Infinity. What
// share of it the watches may take is decided in src/kernel/limits.ts.
Napi::Value DescriptorLimit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double soft = 0, hard = 0;
  int err = rw::DescriptorLimit(&soft, &hard);
  if (err != 0) {
    ThrowErrno(env, err, "getrlimit", nullptr);
    return env.Undefined();
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("soft", Napi::Number::New(env, soft));
  o.Set("hard", Napi::Number::New(env, hard));
  int64_t cap = 0;
  if (rw::MaxFilesPerProcess(&cap) == 0 && cap > 0) o.Set("perProcess", Napi::Number::New(env, static_cast<double>(cap)));
  return o;
}

// pidProbe(pid): whether process `pid` exists (platform.h ProcessPresence).
// Refuses pid <= 0 before any syscall, since kill(0, …) and kill(-n, …)
// address groups, not a process.
Napi::Value PidProbe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t pid = 0;
  if (info.Length() < 1 || !IntArg(env, info[0], "pid", &pid)) return env.Undefined();
  if (pid <= 0) {
    ThrowUsage(env, "ERR_OUT_OF_RANGE", "pid must be a positive integer");
    return env.Undefined();
  }
  return PresenceValue(env, rw::ProcessPresence(static_cast<int>(pid)));
}

// groupProbe(pgid): kill(-pgid, 0) (platform.h GroupPresence; "unknown" on
// Windows, which has no process groups). Refuses pgid <= 1: kill(-1, …)
// means every process, and 0 means the caller's own group.
Napi::Value GroupProbe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t pgid = 0;
  if (info.Length() < 1 || !IntArg(env, info[0], "pgid", &pgid)) return env.Undefined();
  if (pgid <= 1) {
    ThrowUsage(env, "ERR_OUT_OF_RANGE", "pgid must be an integer greater than 1");
    return env.Undefined();
  }
  return PresenceValue(env, rw::GroupPresence(static_cast<int>(pgid)));
}

// probeSetup(localTypes, head, out): registers the list and the two buffers
// every later probeFacts() call uses. May be called again to replace them.
Napi::Value ProbeSetup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[1].IsBuffer() || !info[2].IsTypedArray()) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "probeSetup(localTypes, head, out)");
    return env.Undefined();
  }
  Napi::TypedArray out_ta = info[2].As<Napi::TypedArray>();
  if (out_ta.TypedArrayType() != napi_float64_array || out_ta.ElementLength() < rw::kOutLength) {
    std::string msg = "out must be a Float64Array of length >= constants.outLength (" + std::to_string(rw::kOutLength) + ")";
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", msg.c_str());
    return env.Undefined();
  }
  auto* st = new ProbeState();
  if (!LocalTypesArg(env, info[0], &st->local_types)) {
    delete st;
    return env.Undefined();
  }
  Napi::Buffer<uint8_t> head = info[1].As<Napi::Buffer<uint8_t>>();
  Napi::Float64Array out = out_ta.As<Napi::Float64Array>();
  st->buffers.head = head.Data();
  st->buffers.head_len = head.Length();
  st->buffers.out = out.Data();
  st->buffers.mounts = &st->local_mounts;
  st->head_ref = Napi::Persistent(head);
  st->out_ref = Napi::Persistent(out);
  AddonData* data = Data(env);
  delete data->probe;
  data->probe = st;
  return env.Undefined();
}

// probeFacts(lockPath[, localTypes]) -> stage (constants.stage)
//
// Gathers, in the fixed order of CONTRACT §4.2, the facts a probe needs, in
// one crossing, into the buffers registered by probeSetup() (probe.cc).
// `localTypes`, when given, replaces the registered list for this call only:
// a test seam, not the hot path.
Napi::Value ProbeFacts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!rw::kHasFlock) return Napi::Number::New(env, rw::kNoFlock);
  ProbeState* probe = Data(env)->probe;
  if (probe == nullptr) {
    ThrowUsage(env, "ERR_INVALID_STATE", "probeSetup() must be called before probeFacts()");
    return env.Undefined();
  }
  char lock_path[RW_PATH_MAX + 1];
  if (info.Length() < 1 || !PathArg(env, info[0], lock_path)) return env.Undefined();
  const LocalTypes* list = &probe->local_types;
  LocalTypes override_list;
  if (info.Length() >= 2 && !info[1].IsUndefined()) {
    if (!LocalTypesArg(env, info[1], &override_list)) return env.Undefined();
    list = &override_list;
  }
  rw::ProbeBuffers buffers = probe->buffers;
  if (list != &probe->local_types) buffers.mounts = nullptr;
  return Napi::Number::New(env, rw::GatherProbeFacts(lock_path, *list, buffers));
}

// probeFactsAt(dirfd, name[, localTypes]) -> stage: probeFacts() for the
// lock file `name` inside the directory open as `dirfd` (see dirfd.cc), so
// the run directory a reader checked is the one probed, whatever is renamed
// meanwhile.
Napi::Value ProbeFactsAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!rw::kHasFlock) return Napi::Number::New(env, rw::kNoFlock);
  ProbeState* probe = Data(env)->probe;
  if (probe == nullptr) {
    ThrowUsage(env, "ERR_INVALID_STATE", "probeSetup() must be called before probeFactsAt()");
    return env.Undefined();
  }
  int64_t dirfd = 0;
  char name[RW_PATH_MAX + 1];
  if (info.Length() < 2 || !IntArg(env, info[0], "dirfd", &dirfd) || !PathArg(env, info[1], name)) return env.Undefined();
  if (dirfd < 0 || name[0] == '\0' || strchr(name, '/') != nullptr) {
    ThrowUsage(env, "ERR_INVALID_ARG_VALUE", "probeFactsAt(dirfd, name): dirfd >= 0 and a name without '/'");
    return env.Undefined();
  }
  const LocalTypes* list = &probe->local_types;
  LocalTypes override_list;
  if (info.Length() >= 3 && !info[2].IsUndefined()) {
    if (!LocalTypesArg(env, info[2], &override_list)) return env.Undefined();
    list = &override_list;
  }
  rw::ProbeBuffers buffers = probe->buffers;
  if (list != &probe->local_types) buffers.mounts = nullptr;
  return Napi::Number::New(env, rw::GatherProbeFactsAt(static_cast<int>(dirfd), name, *list, buffers));
}

// ---------------------------------------------------------------------------
// Constants

// The numbers TypeScript reads the addon's answers by, as frozen objects
// generated from the lists in facts.h (so the C++ enums and the exports
// cannot disagree). src/kernel/native.ts checks them once, at load.
Napi::Object Constants(Napi::Env env) {
  Napi::Object stage = Napi::Object::New(env);
#define RW_STAGE_EXPORT(name, value) stage.Set(#name, Napi::Number::New(env, value));
  RW_STAGES(RW_STAGE_EXPORT)
#undef RW_STAGE_EXPORT
  stage.Freeze();

  Napi::Object slot = Napi::Object::New(env);
#define RW_SLOT_EXPORT(name, js, value) slot.Set(js, Napi::Number::New(env, value));
  RW_OUT_SLOTS(RW_SLOT_EXPORT)
#undef RW_SLOT_EXPORT
  slot.Freeze();

  Napi::Object ops = Napi::Object::New(env);
#define RW_FLOCK_EXPORT(name, value) ops.Set(#name, Napi::Number::New(env, value));
  RW_FLOCK_OPS(RW_FLOCK_EXPORT)
#undef RW_FLOCK_EXPORT
  ops.Freeze();

  Napi::Object c = Napi::Object::New(env);
  c.Set("seamVersion", Napi::Number::New(env, rw::kSeamVersion));
  c.Set("stage", stage);
  c.Set("outSlot", slot);
  c.Set("outLength", Napi::Number::New(env, static_cast<double>(rw::kOutLength)));
  c.Set("flockOp", ops);
  c.Set("fsTypeKind", Napi::String::New(env, rw::kFsTypeIsName ? "name" : "magic"));
  c.Freeze();
  return c;
}

Napi::Object Register(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new AddonData());
  exports.Set("init", Napi::Function::New(env, Init, "init"));
  // errnos: every errno name this addon's <errno.h> defines, with its number (darwin's on a Mac and
  // in the XNU model, linux's on linux): the numbers the addon answers are named by this table.
  Napi::Object errnos = Napi::Object::New(env);
  for (size_t i = 0; i < rw::ErrnoCount(); i++) {
    int value = 0;
    const char* name = rw::ErrnoAt(i, &value);
    errnos.Set(name, Napi::Number::New(env, value));
  }
  errnos.Freeze();
  exports.Set("errnos", errnos);
  exports.Set("flock", Napi::Function::New(env, Flock, "flock"));
  exports.Set("recordLockHolder", Napi::Function::New(env, RecordLockHolderJs, "recordLockHolder"));
  exports.Set("fsType", Napi::Function::New(env, FsTypeOf, "fsType"));
  exports.Set("pidProbe", Napi::Function::New(env, PidProbe, "pidProbe"));
  exports.Set("releaseFreeMemory", Napi::Function::New(env, ReleaseFreeMemoryJs, "releaseFreeMemory"));
  exports.Set("descriptorLimit", Napi::Function::New(env, DescriptorLimit, "descriptorLimit"));
  exports.Set("groupProbe", Napi::Function::New(env, GroupProbe, "groupProbe"));
  exports.Set("probeSetup", Napi::Function::New(env, ProbeSetup, "probeSetup"));
  exports.Set("probeFacts", Napi::Function::New(env, ProbeFacts, "probeFacts"));
  exports.Set("probeFactsAt", Napi::Function::New(env, ProbeFactsAt, "probeFactsAt"));
  rw::RegisterDirFd(env, exports);  // dirfd.cc
  rw::RegisterRunFiles(env, exports);  // runfiles.cc
  rw::RegisterIdentity(env, exports);  // identity.cc
  static const rw::Throwers kReserveThrowers = {ThrowErrno, ThrowUsage};  // native/reserve.cc
  exports.Set("reserveSpace", Napi::Function::New(env, rw::ReserveSpace, "reserveSpace", const_cast<rw::Throwers*>(&kReserveThrowers)));
  exports.Set("hasFlock", Napi::Boolean::New(env, rw::kHasFlock));
  exports.Set("platform", Napi::String::New(env, rw::kPlatformName));
  exports.Set("constants", Constants(env));
  rw::RegisterScan(env, exports);
  exports.Set("notify", rw::NotifyExports(env));
  return exports;
}

}  // namespace

// The argument and error helpers above, for the other N-API files (addon_js.h).
namespace rw {
namespace js {
void ThrowErrno(Napi::Env env, int err, const char* syscall, const char* detail) { ::ThrowErrno(env, err, syscall, detail); }
void ThrowUsage(Napi::Env env, const char* code, const char* msg) { ::ThrowUsage(env, code, msg); }
bool PathArg(Napi::Env env, napi_value v, char (&buf)[RW_PATH_MAX + 1]) { return ::PathArg(env, v, buf); }
bool IntArg(Napi::Env env, const Napi::Value& v, const char* name, int64_t* out) { return ::IntArg(env, v, name, out); }
Napi::Value FsTypeValue(Napi::Env env, const FsType& type) { return ::FsTypeValue(env, type); }
}  // namespace js
}  // namespace rw

NODE_API_MODULE(runwarden, Register)
