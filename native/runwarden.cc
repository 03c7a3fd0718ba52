// runwarden native seam: the kernel facts, and nothing that decides.
//
// Every function here answers one question the kernel can answer exactly and
// returns the answer as a plain value. Expected outcomes (a lock granted or
// contended, a pid gone) are values, never exceptions, so the hot path of a
// probe costs no throw. Only genuine failures throw, and they throw an
// instance of the one error class the TypeScript side handed to init(), so
// every native error carries a stable .code (errno name), .errno and .syscall.
//
// Policy (what a fact means for a run) lives in src/, never here. The one
// place this file compares anything is probeFacts(), which checks the
// filesystem type against a list the caller supplies, because the order of
// B.2 requires that the lock file is not even opened on a filesystem that is
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

Napi::FunctionReference* g_error_class = nullptr;

// Throws an instance of the registered error class (or a plain Error with the
// same fields before init() ran) describing errno `err` from `syscall`.
void ThrowErrno(Napi::Env env, int err, const char* syscall, const char* detail) {
  const char* code = uv_err_name(-err);
  std::string msg = std::string(syscall) + " failed: " + code + " (" + strerror(err) + ")";
  if (detail != nullptr && detail[0] != '\0') msg += std::string(", ") + detail;
  Napi::Object obj;
  if (g_error_class != nullptr) {
    obj = g_error_class->New({Napi::String::New(env, msg), Napi::String::New(env, code),
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
  if (g_error_class != nullptr) {
    obj = g_error_class->New({Napi::String::New(env, msg), Napi::String::New(env, code),
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
  if (g_error_class == nullptr) g_error_class = new Napi::FunctionReference();
  *g_error_class = Napi::Persistent(info[0].As<Napi::Function>());
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

// probeFacts(dir, lockPath, localTypes, head, out) -> stage
//
// Gathers, in the fixed order of SPEC B.2, the facts a probe needs, in one
// crossing: statfs(dir) checked against localTypes (linux: Uint32Array of
// f_type magics; darwin: Array of f_fstypename strings), and only if local,
// open(lockPath, O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC) (never O_CREAT),
// fstat, pread of up to head.length bytes at offset 0 into `head`, then
// flock(LOCK_SH|LOCK_NB), LOCK_UN at once if granted, and close. It never
// creates, writes, truncates or removes anything. Taking and dropping a
// shared lock on a file that later turns out to be unmarked is harmless: a
// pre-flock writer holds no flock for it to disturb.
Napi::Value ProbeFacts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
#if !RW_HAVE_FLOCK
  return Napi::Number::New(env, kNoFlock);
#else
  if (info.Length() < 5 || !info[3].IsBuffer() || !info[4].IsTypedArray()) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "probeFacts(dir, lockPath, localTypes, head, out)");
    return env.Undefined();
  }
  Napi::TypedArray out_ta = info[4].As<Napi::TypedArray>();
  if (out_ta.TypedArrayType() != napi_float64_array || out_ta.ElementLength() < 5) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "out must be a Float64Array of length >= 5");
    return env.Undefined();
  }
  double* out = out_ta.As<Napi::Float64Array>().Data();
  Napi::Buffer<uint8_t> head = info[3].As<Napi::Buffer<uint8_t>>();

  char dir[PATH_MAX + 1];
  char lock_path[PATH_MAX + 1];
  if (!PathArg(env, info[0], dir) || !PathArg(env, info[1], lock_path)) return env.Undefined();

  struct statfs sfs;
  if (statfs(dir, &sfs) != 0) {
    out[1] = errno;
    return Napi::Number::New(env, kFsError);
  }
  bool local = false;
#if defined(__APPLE__)
  if (!info[2].IsArray()) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "localTypes must be an Array of strings on darwin");
    return env.Undefined();
  }
  Napi::Array names = info[2].As<Napi::Array>();
  for (uint32_t i = 0; i < names.Length() && !local; i++) {
    Napi::Value v = names[i];
    if (v.IsString() && v.As<Napi::String>().Utf8Value() == sfs.f_fstypename) local = true;
  }
  out[0] = 0;
#else
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    ThrowUsage(env, "ERR_INVALID_ARG_TYPE", "localTypes must be a Uint32Array on linux");
    return env.Undefined();
  }
  Napi::Uint32Array types = info[2].As<Napi::Uint32Array>();
  uint32_t ftype = static_cast<uint32_t>(sfs.f_type);
  for (size_t i = 0; i < types.ElementLength(); i++) {
    if (types[i] == ftype) {
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
    n = pread(fd, head.Data(), head.Length(), 0);
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
  exports.Set("init", Napi::Function::New(env, Init, "init"));
  exports.Set("flock", Napi::Function::New(env, Flock, "flock"));
  exports.Set("fsType", Napi::Function::New(env, FsType, "fsType"));
  exports.Set("pidProbe", Napi::Function::New(env, PidProbe, "pidProbe"));
  exports.Set("groupProbe", Napi::Function::New(env, GroupProbe, "groupProbe"));
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
