// runwarden native: reserveSpace(fd, offset, length).
//
// Allocates the blocks of [offset, offset + length) of an open regular file
// without changing its size, so that later writes into that range do not
// need new blocks and cannot fail for want of space. A leg uses it to keep
// room for its closing events in events.jsonl (src/write/append.ts); how much
// and when is decided there, not here.
//
// Answers are values: "reserved"; "unsupported" when this filesystem or
// platform cannot reserve (the caller goes on without); "ENOSPC" / "EDQUOT"
// when there is no room (or no quota) left for it. Anything else (EBADF, EIO,
// a bad argument) throws a NativeError.
//
// One file for every platform, chosen by compile-time conditions:
//   linux   fallocate(2) with FALLOC_FL_KEEP_SIZE. Built and tested.
//   darwin  fcntl(F_PREALLOCATE) from the physical end of the file (fcntl(2)).
//           Compiled for macOS by the darwin build gate and run against the
//           XNU model (native/xnu-model/); never run on a Mac.
//   other   "unsupported".
#include "reserve.h"

#include <errno.h>
#include <stdint.h>

#if defined(__linux__)
#include <fcntl.h>
#include <linux/falloc.h>
#elif defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace rw {
namespace {

enum class Reserve { kReserved, kUnsupported, kNoSpace, kNoQuota, kFailed };

// A non-negative integer a double holds exactly (offsets past 2 GiB are real:
// a stream may be that long).
bool OffsetArg(Napi::Env env, const Throwers* t, const Napi::Value& v, const char* what, int64_t* out) {
  if (!v.IsNumber()) {
    t->usage_error(env, "ERR_INVALID_ARG_TYPE", what);
    return false;
  }
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0.0 && d <= 9007199254740991.0) || d != static_cast<double>(static_cast<int64_t>(d))) {
    t->usage_error(env, "ERR_OUT_OF_RANGE", what);
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

#if defined(__linux__)
const char* const kSyscall = "fallocate";

Reserve DoReserve(int fd, int64_t offset, int64_t length, int* err) {
  int r;
  do {
    r = fallocate(fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset), static_cast<off_t>(length));
  } while (r != 0 && errno == EINTR);
  if (r == 0) return Reserve::kReserved;
  *err = errno;
  // EOPNOTSUPP: this filesystem (or this mode on it) cannot preallocate
  // (ramfs, ext2/3, many FUSE and network filesystems). ENOSYS: a kernel or
  // seccomp filter without the call.
  if (*err == EOPNOTSUPP || *err == ENOSYS) return Reserve::kUnsupported;
  if (*err == ENOSPC) return Reserve::kNoSpace;
  if (*err == EDQUOT) return Reserve::kNoQuota;
  return Reserve::kFailed;
}
#elif defined(__APPLE__)
const char* const kSyscall = "fcntl(F_PREALLOCATE)";

// F_PREALLOCATE allocates from the physical end of the file (F_PEOFPOSMODE),
// which is at or past the logical end; what is already allocated past
// `offset` (st_blocks) counts toward the range. Space allocated past the end
// of file may be released by the filesystem when the file is closed; the
// caller keeps the descriptor open for the life of the leg.
Reserve DoReserve(int fd, int64_t offset, int64_t length, int* err) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *err = errno;
    return Reserve::kFailed;
  }
  int64_t allocated = static_cast<int64_t>(st.st_blocks) * 512;
  int64_t want = offset + length - allocated;
  if (want <= 0) return Reserve::kReserved;
  fstore_t store = {};
  store.fst_flags = F_ALLOCATEALL;
  store.fst_posmode = F_PEOFPOSMODE;
  store.fst_offset = 0;
  store.fst_length = static_cast<off_t>(want);
  int r;
  do {
    r = fcntl(fd, F_PREALLOCATE, &store);
  } while (r == -1 && errno == EINTR);
  if (r != -1) return Reserve::kReserved;
  *err = errno;
  if (*err == ENOTSUP || *err == EOPNOTSUPP || *err == ENOSYS || *err == EINVAL) return Reserve::kUnsupported;
  if (*err == ENOSPC) return Reserve::kNoSpace;
  if (*err == EDQUOT) return Reserve::kNoQuota;
  return Reserve::kFailed;
}
#else
const char* const kSyscall = "reserve";

Reserve DoReserve(int, int64_t, int64_t, int*) { return Reserve::kUnsupported; }
#endif

}  // namespace

Napi::Value ReserveSpace(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Throwers* t = static_cast<const Throwers*>(info.Data());
  int64_t fd = 0, offset = 0, length = 0;
  if (info.Length() < 3) {
    t->usage_error(env, "ERR_INVALID_ARG_TYPE", "reserveSpace(fd, offset, length)");
    return env.Undefined();
  }
  if (!OffsetArg(env, t, info[0], "fd must be an integer >= 0", &fd) ||
      !OffsetArg(env, t, info[1], "offset must be an integer >= 0", &offset) ||
      !OffsetArg(env, t, info[2], "length must be an integer >= 1", &length)) {
    return env.Undefined();
  }
  if (fd > INT32_MAX) {
    t->usage_error(env, "ERR_OUT_OF_RANGE", "fd must be a 32-bit integer");
    return env.Undefined();
  }
  if (length < 1 || offset > INT64_MAX - length) {
    t->usage_error(env, "ERR_OUT_OF_RANGE", "length must be an integer >= 1, and offset + length must fit a file offset");
    return env.Undefined();
  }
  int err = 0;
  switch (DoReserve(static_cast<int>(fd), offset, length, &err)) {
    case Reserve::kReserved:
      return Napi::String::New(env, "reserved");
    case Reserve::kUnsupported:
      return Napi::String::New(env, "unsupported");
    case Reserve::kNoSpace:
      return Napi::String::New(env, "ENOSPC");
    case Reserve::kNoQuota:
      return Napi::String::New(env, "EDQUOT");
    case Reserve::kFailed:
      break;
  }
  t->errno_error(env, err, kSyscall, nullptr);
  return env.Undefined();
}

}  // namespace rw
