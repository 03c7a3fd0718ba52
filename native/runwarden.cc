// runwarden native seam: the kernel facts, and nothing that decides.
//
// Every function here answers one question the kernel can answer exactly and
// returns the answer as a plain value. Expected outcomes (a lock granted or
// contended, a pid gone) are values, never exceptions, so the hot path of a
// probe costs no throw. Only genuine failures throw, and they throw an
// instance of the one error class the TypeScript side handed to init(), so
// every native error carries a stable .code (errno name), .errno and .syscall.
//
// State kept between calls (the error class, the probe's reused buffers) is
// per Node environment (N-API instance data), so worker threads each get their
// own and never touch another environment's references.
//
// Policy (what a fact means for a run) lives in src/, never here. The one
// place this file compares anything is probeFacts(), which checks the
// filesystem type against a list the caller supplies, because the order of
// CONTRACT §4.2 requires that the lock file is not even opened on a filesystem that is
// not known to be local, and doing that check here saves a round trip.

#include <napi.h>
#include <uv.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/vfs.h>
#define RW_HAVE_FLOCK 1
#elif defined(__APPLE__)
// darwin: written against the documented statfs(2)/flock(2) interfaces, and
// compiled and run only on darwin. It has never been compiled or tested by
// this project's CI, which is linux-only.
#include <sys/mount.h>
#include <sys/param.h>
#define RW_HAVE_FLOCK 1
#else
#define RW_HAVE_FLOCK 0
#endif

namespace {

// The probe's reused buffers and the known-local list, registered once by
// probeSetup(). Registering them once, instead of passing them on every call,
// is what keeps a probe close to its syscalls: each typed-array argument costs
// several V8 type queries per call (napi_get_typedarray_info and friends),
// which measured as ~0.2x of the syscall floor on their own (bench/PROFILE.md).
// The references pin head and out for the life of the process, so the raw
// pointers below stay valid (an ArrayBuffer's backing store never moves).
struct ProbeState {
  Napi::Reference<Napi::Buffer<uint8_t>> head_ref;
  Napi::Reference<Napi::Float64Array> out_ref;
  uint8_t* head = nullptr;
  size_t head_len = 0;
  double* out = nullptr;
#if defined(__APPLE__)
  std::vector<std::string> local_types;
#else
  std::vector<uint32_t> local_types;
#endif
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

// Throws an instance of the registered error class (or a plain Error with the
// same fields before init() ran) describing errno `err` from `syscall`.
void ThrowErrno(Napi::Env env, int err, const char* syscall, const char* detail) {
  const char* code = uv_err_name(-err);
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

// Copies a JS string into a fixed buffer without heap allocation. Returns
// false (with an exception pending) when it is not a string or is too long.
bool PathArg(Napi::Env env, napi_value v, char (&buf)[PATH_MAX + 1]) {
  size_t len = 0;
  napi_status st = napi_get_value_string_utf8(env, v, buf, sizeof buf, &len);
  if (st != napi_ok) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "path must be a string");
    return false;
  }
  if (len >= PATH_MAX) {
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

// flock(2) that retries on EINTR and reports EWOULDBLOCK as "contended".
// Returns 0 granted, 1 contended, -1 failure (errno set).
int FlockNB(int fd, int op) {
  int r;
  do {
    r = flock(fd, op);
  } while (r != 0 && errno == EINTR);
  if (r == 0) return 0;
  if (errno == EWOULDBLOCK || errno == EAGAIN) return 1;
  return -1;
}

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "init(ErrorClass) needs a constructor");
    return env.Undefined();
  }
  Data(env)->error_class = Napi::Persistent(info[0].As<Napi::Function>());
  return env.Undefined();
}

// flock(fd, op): op 1 = LOCK_SH|LOCK_NB, 2 = LOCK_EX|LOCK_NB, 3 = LOCK_UN.
// Returns true when granted, false when contended; throws otherwise.
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
  int how;
  switch (op) {
    case 1: how = LOCK_SH | LOCK_NB; break;
    case 2: how = LOCK_EX | LOCK_NB; break;
    case 3: how = LOCK_UN; break;
    default:
      ThrowUsage(env, "ERR_OUT_OF_RANGE", "op must be 1 (shared), 2 (exclusive) or 3 (unlock)");
      return env.Undefined();
  }
  int r = FlockNB(static_cast<int>(fd), how);
  if (r < 0) {
    ThrowErrno(env, errno, "flock", nullptr);
    return env.Undefined();
  }
  return Napi::Boolean::New(env, r == 0);
}

// fsType(dir): linux f_type as an unsigned number; darwin f_fstypename.
Napi::Value FsType(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  char path[PATH_MAX + 1];
  if (info.Length() < 1 || !PathArg(env, info[0], path)) return env.Undefined();
#if !RW_HAVE_FLOCK
  ThrowErrno(env, ENOSYS, "statfs", path);
  return env.Undefined();
#else
  struct statfs sfs;
  if (statfs(path, &sfs) != 0) {
    ThrowErrno(env, errno, "statfs", path);
    return env.Undefined();
  }
#if defined(__APPLE__)
  return Napi::String::New(env, sfs.f_fstypename);
#else
  return Napi::Number::New(env, static_cast<double>(static_cast<uint32_t>(sfs.f_type)));
#endif
#endif
}

// Classifies kill(target, 0): "gone" (ESRCH), "present" (success or EPERM: a
// process exists that we may not signal), "unknown" (anything else).
Napi::Value ClassifyKill(Napi::Env env, pid_t target) {
  if (kill(target, 0) == 0) return Napi::String::New(env, "present");
  int err = errno;
  if (err == ESRCH) return Napi::String::New(env, "gone");
  if (err == EPERM) return Napi::String::New(env, "present");
  return Napi::String::New(env, "unknown");
}

// pidProbe(pid): refuses pid <= 0 before any syscall, since kill(0, …) and
// kill(-n, …) address groups, not a process.
Napi::Value PidProbe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t pid = 0;
  if (info.Length() < 1 || !IntArg(env, info[0], "pid", &pid)) return env.Undefined();
  if (pid <= 0) {
    ThrowUsage(env, "ERR_OUT_OF_RANGE", "pid must be a positive integer");
    return env.Undefined();
  }
  return ClassifyKill(env, static_cast<pid_t>(pid));
}

// groupProbe(pgid): kill(-pgid, 0). Refuses pgid <= 1: kill(-1, …) means
// every process, and 0 means the caller's own group.
Napi::Value GroupProbe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t pgid = 0;
  if (info.Length() < 1 || !IntArg(env, info[0], "pgid", &pgid)) return env.Undefined();
  if (pgid <= 1) {
    ThrowUsage(env, "ERR_OUT_OF_RANGE", "pgid must be an integer greater than 1");
    return env.Undefined();
  }
  return ClassifyKill(env, static_cast<pid_t>(-pgid));
}

// Stage codes returned by probeFacts; mirrored in src/native.ts.
enum Stage {
  kFsNotLocal = 0,   // out[0] = fs type (linux)
  kFsError = 1,      // out[1] = errno
  kOpenError = 2,    // out[1] = errno
  kNotRegular = 3,   // out[2] = st_mode
  kReadError = 4,    // out[1] = errno
  kShGranted = 5,    // out[3] = head length, out[4] = file size
  kShContended = 6,  // out[3], out[4] as above
  kShError = 7,      // out[1] = errno; out[3], out[4] as above
  kNoFlock = 8,      // this platform has no flock(2)
};


// Reads a local-type list argument (linux: Uint32Array of f_type magics;
// darwin: Array of f_fstypename strings) into `into`. False, with an
// exception pending, when it has the wrong shape.
template <typename Vec>
bool LocalTypesArg(Napi::Env env, const Napi::Value& v, Vec* into) {
  into->clear();
#if defined(__APPLE__)
  if (!v.IsArray()) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "localTypes must be an Array of strings on darwin");
    return false;
  }
  Napi::Array names = v.As<Napi::Array>();
  for (uint32_t i = 0; i < names.Length(); i++) {
    Napi::Value name = names[i];
    if (name.IsString()) into->push_back(name.As<Napi::String>().Utf8Value());
  }
#else
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "localTypes must be a Uint32Array on linux");
    return false;
  }
  Napi::Uint32Array types = v.As<Napi::Uint32Array>();
  for (size_t i = 0; i < types.ElementLength(); i++) into->push_back(types[i]);
#endif
  return true;
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
  if (out_ta.TypedArrayType() != napi_float64_array || out_ta.ElementLength() < 5) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "out must be a Float64Array of length >= 5");
    return env.Undefined();
  }
  auto* st = new ProbeState();
  if (!LocalTypesArg(env, info[0], &st->local_types)) {
    delete st;
    return env.Undefined();
  }
  Napi::Buffer<uint8_t> head = info[1].As<Napi::Buffer<uint8_t>>();
  Napi::Float64Array out = out_ta.As<Napi::Float64Array>();
  st->head = head.Data();
  st->head_len = head.Length();
  st->out = out.Data();
  st->head_ref = Napi::Persistent(head);
  st->out_ref = Napi::Persistent(out);
  AddonData* data = Data(env);
  delete data->probe;
  data->probe = st;
  return env.Undefined();
}

// The directory part of a POSIX path, as path.dirname() names it (the same
// directory; "a//b" gives "a" where node gives "a/"): trailing slashes and
// the last component dropped, "." for a bare name, "/" for the root.
void DirName(const char* path, char (&dir)[PATH_MAX + 1]) {
  size_t len = strlen(path);
  memcpy(dir, path, len + 1);
  size_t i = len;
  while (i > 1 && dir[i - 1] == '/') i--;        // trailing slashes
  while (i > 0 && dir[i - 1] != '/') i--;        // last component
  while (i > 1 && dir[i - 1] == '/') i--;        // slashes before it
  if (i == 0) {
    dir[0] = '.';
    dir[1] = '\0';
  } else {
    dir[i] = '\0';
  }
}

// probeFacts(lockPath[, localTypes]) -> stage
//
// Gathers, in the fixed order of CONTRACT §4.2, the facts a probe needs, in one
// crossing, into the buffers registered by probeSetup(): statfs of the lock
// file's directory (the run directory), checked
// against the registered list (or, for this call only, `localTypes` when
// given: a test seam, not the hot path), and only if local,
// open(lockPath, O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC) (never O_CREAT),
// fstat, pread of up to head.length bytes at offset 0 into head, then
// flock(LOCK_SH|LOCK_NB), LOCK_UN at once if granted, and close. It never
// creates, writes, truncates or removes anything. Taking and dropping a
// shared lock on a file that later turns out to be unmarked is harmless: a
// pre-flock writer holds no flock for it to disturb.
Napi::Value ProbeFacts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
#if !RW_HAVE_FLOCK
  return Napi::Number::New(env, kNoFlock);
#else
  ProbeState* probe = Data(env)->probe;
  if (probe == nullptr) {
    ThrowUsage(env, "ERR_INVALID_STATE", "probeSetup() must be called before probeFacts()");
    return env.Undefined();
  }
  char lock_path[PATH_MAX + 1];
  if (info.Length() < 1 || !PathArg(env, info[0], lock_path)) return env.Undefined();
  char dir[PATH_MAX + 1];
  DirName(lock_path, dir);
  const auto* list = &probe->local_types;
  decltype(probe->local_types) override_list;
  if (info.Length() >= 2 && !info[1].IsUndefined()) {
    if (!LocalTypesArg(env, info[1], &override_list)) return env.Undefined();
    list = &override_list;
  }
  double* out = probe->out;

  struct statfs sfs;
  if (statfs(dir, &sfs) != 0) {
    out[1] = errno;
    return Napi::Number::New(env, kFsError);
  }
  bool local = false;
#if defined(__APPLE__)
  for (const auto& name : *list) {
    if (name == sfs.f_fstypename) {
      local = true;
      break;
    }
  }
  out[0] = 0;
#else
  uint32_t ftype = static_cast<uint32_t>(sfs.f_type);
  for (uint32_t t : *list) {
    if (t == ftype) {
      local = true;
      break;
    }
  }
  out[0] = ftype;
#endif
  if (!local) return Napi::Number::New(env, kFsNotLocal);

  int fd;
  do {
    fd = open(lock_path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    out[1] = errno;
    return Napi::Number::New(env, kOpenError);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    out[1] = errno;
    close(fd);
    return Napi::Number::New(env, kOpenError);
  }
  if (!S_ISREG(st.st_mode)) {
    out[2] = st.st_mode;
    close(fd);
    return Napi::Number::New(env, kNotRegular);
  }
  ssize_t n;
  do {
    n = pread(fd, probe->head, probe->head_len, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    out[1] = errno;
    close(fd);
    return Napi::Number::New(env, kReadError);
  }
  out[3] = static_cast<double>(n);
  out[4] = static_cast<double>(st.st_size);
  int r = FlockNB(fd, LOCK_SH | LOCK_NB);
  int stage;
  if (r == 0) {
    FlockNB(fd, LOCK_UN);  // close() below releases it regardless
    stage = kShGranted;
  } else if (r == 1) {
    stage = kShContended;
  } else {
    out[1] = errno;
    stage = kShError;
  }
  close(fd);
  return Napi::Number::New(env, stage);
#endif
}

Napi::Object Register(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new AddonData());
  exports.Set("init", Napi::Function::New(env, Init, "init"));
  exports.Set("flock", Napi::Function::New(env, Flock, "flock"));
  exports.Set("fsType", Napi::Function::New(env, FsType, "fsType"));
  exports.Set("pidProbe", Napi::Function::New(env, PidProbe, "pidProbe"));
  exports.Set("groupProbe", Napi::Function::New(env, GroupProbe, "groupProbe"));
  exports.Set("probeSetup", Napi::Function::New(env, ProbeSetup, "probeSetup"));
  exports.Set("probeFacts", Napi::Function::New(env, ProbeFacts, "probeFacts"));
  exports.Set("hasFlock", Napi::Boolean::New(env, RW_HAVE_FLOCK != 0));
  exports.Set("platform",
#if defined(__linux__)
              Napi::String::New(env, "linux")
#elif defined(__APPLE__)
              Napi::String::New(env, "darwin")
#else
              Napi::String::New(env, "other")
#endif
  );
  return exports;
}

}  // namespace

NODE_API_MODULE(runwarden, Register)
