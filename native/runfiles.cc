// runwarden native: a run directory's two files in one crossing.
//
// Listing a root inspects every run: open the run directory without
// following a link, then, relative to it, the stream (`events.jsonl`, its
// last bytes) and the snapshot (`state.json`, whole). Done call by call from
// TypeScript that is a dozen N-API crossings and as many Stats objects per
// run, several times the system calls' own cost (bench/RESULTS.md "Scale").
// Here the same system calls, in the same order and with the same flags
// (O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC, fstat, pread), run in one
// crossing and leave raw facts in buffers registered once.
//
// Mechanism only: which names, what a missing file or a short read means,
// whether a lock is probed, and every message are decided in TypeScript
// (src/kernel/runfiles.ts, src/status/inspect.ts). Any failure is reported
// as the failing call and its errno, never thrown: the caller then takes the
// call-by-call path, which words it. The run directory's descriptor is left
// open for the caller (the lock is probed through it), and so is the
// stream's when the stream is longer than the registered tail buffer (the
// caller may need to read further back); every other descriptor is closed
// here. Plain POSIX: the same on linux and darwin.
#include <napi.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

#include "addon_js.h"

namespace rw {
namespace {

// The slots of one file's facts; the file's block starts at kFileBase + which * kFileSlots.
#define RW_RUNFILE_SLOTS(X) \
  X(status)                 \
  X(errnum)                  \
  X(mode)                   \
  X(size)                   \
  X(dev)                    \
  X(ino)                    \
  X(mtimeMs)                \
  X(ctimeMs)                \
  X(bytes)                  \
  X(at)                     \
  X(fd)

enum FileSlot {
#define RW_X(name) kSlot_##name,
  RW_RUNFILE_SLOTS(RW_X)
#undef RW_X
      kFileSlots
};

// Whole-call slots, before the files' blocks.
enum CallSlot { kDirErrno = 0, kDirFd = 1, kFileBase = 2 };

// What happened to one file (slot `status`).
#define RW_RUNFILE_STATUS(X) \
  X(NotAsked, 0)             \
  X(Read, 1)                 \
  X(OpenFailed, 2)           \
  X(StatFailed, 3)           \
  X(NotRegular, 4)           \
  X(ReadFailed, 5)           \
  X(NotRead, 6)

enum FileStatus {
#define RW_X(name, v) k##name = v,
  RW_RUNFILE_STATUS(RW_X)
#undef RW_X
};

constexpr int kFiles = 2;  // 0: the stream, read from its end; 1: the snapshot, read whole
constexpr size_t kOutLength = kFileBase + kFiles * kFileSlots;

struct RunFiles {
  Napi::Reference<Napi::Buffer<uint8_t>> buf_ref[kFiles];
  Napi::Reference<Napi::Float64Array> out_ref;
  uint8_t* buf[kFiles] = {nullptr, nullptr};
  size_t len[kFiles] = {0, 0};
  double* out = nullptr;
  std::string name[kFiles];
};

double Ms(const struct timespec& t) {
  // As Node computes Stats' *Ms fields (sec * 1e3 + nsec / 1e6), so identities compare equal across the two.
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

#if defined(__APPLE__)
#define RW_MTIM(st) (st).st_mtimespec
#define RW_CTIM(st) (st).st_ctimespec
#else
#define RW_MTIM(st) (st).st_mtim
#define RW_CTIM(st) (st).st_ctim
#endif

ssize_t PreadFull(int fd, uint8_t* buf, size_t len, off_t at) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = pread(fd, buf + done, len - done, at + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    done += static_cast<size_t>(n);
    // A regular file reads short only at its end.
    if (n == 0 || static_cast<size_t>(n) < len - (done - static_cast<size_t>(n))) break;
  }
  return static_cast<ssize_t>(done);
}

// One file of the directory open as `dirfd`: open, fstat, read into its buffer.
// The stream (which 0) is read from its end, as much as the buffer holds, and its
// descriptor kept when it is longer than that; the snapshot (which 1) is read
// whole with one byte more than its size (to see one that grew), or not read
// when the buffer cannot hold that.
void OneFile(RunFiles* rf, int dirfd, int which) {
  double* o = rf->out + kFileBase + which * kFileSlots;
  for (int i = 0; i < kFileSlots; i++) o[i] = 0;
  o[kSlot_fd] = -1;
  int fd;
  do {
    fd = openat(dirfd, rf->name[which].c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    o[kSlot_status] = kOpenFailed;
    o[kSlot_errnum] = errno;
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    o[kSlot_status] = kStatFailed;
    o[kSlot_errnum] = errno;
    close(fd);
    return;
  }
  o[kSlot_mode] = st.st_mode;
  o[kSlot_size] = static_cast<double>(st.st_size);
  o[kSlot_dev] = static_cast<double>(st.st_dev);
  o[kSlot_ino] = static_cast<double>(st.st_ino);
  o[kSlot_mtimeMs] = Ms(RW_MTIM(st));
  o[kSlot_ctimeMs] = Ms(RW_CTIM(st));
  if (!S_ISREG(st.st_mode)) {
    o[kSlot_status] = kNotRegular;
    close(fd);
    return;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  size_t want;
  off_t at;
  if (which == 0) {
    want = size < rf->len[0] ? size : rf->len[0];
    at = static_cast<off_t>(size - want);
  } else {
    if (size + 1 > rf->len[1]) {
      o[kSlot_status] = kNotRead;
      close(fd);
      return;
    }
    want = size + 1;
    at = 0;
  }
  ssize_t n = want == 0 ? 0 : PreadFull(fd, rf->buf[which], want, at);
  if (n < 0) {
    o[kSlot_status] = kReadFailed;
    o[kSlot_errnum] = errno;
    close(fd);
    return;
  }
  o[kSlot_status] = kRead;
  o[kSlot_bytes] = static_cast<double>(n);
  o[kSlot_at] = static_cast<double>(at);
  if (which == 0 && size > rf->len[0]) {
    o[kSlot_fd] = fd;
  } else {
    close(fd);
  }
}

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

void ReadWanted(RunFiles* rf, int dirfd, int want) {
  for (int w = 0; w < kFiles; w++) {
    if ((want & (1 << w)) != 0) {
      OneFile(rf, dirfd, w);
    } else {
      double* o = rf->out + kFileBase + w * kFileSlots;
      for (int i = 0; i < kFileSlots; i++) o[i] = 0;
      o[kSlot_fd] = -1;
    }
  }
}

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

// runFiles(handle, path, want) -> the run directory's descriptor (open; the
// caller closes it), or -1 when it could not be opened (errno in slot 0).
// The directory is opened O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC, as
// openDirNoFollow does; then the wanted files are read relative to it.
Napi::Value RunFilesJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RunFiles* rf = Handle(info);
  char path[PATH_MAX + 1];
  int want = 0;
  if (rf == nullptr || info.Length() < 3 || !js::PathArg(env, info[1], path) || !WantArg(info, 2, &want)) return env.Undefined();
  int dirfd;
  do {
    dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  } while (dirfd < 0 && errno == EINTR);
  if (dirfd < 0) {
    rf->out[kDirErrno] = errno;
    rf->out[kDirFd] = -1;
    ReadWanted(rf, -1, 0);
    return Napi::Number::New(env, -1);
  }
  rf->out[kDirErrno] = 0;
  rf->out[kDirFd] = dirfd;
  ReadWanted(rf, dirfd, want);
  return Napi::Number::New(env, dirfd);
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

// The kind of a directory entry, as one letter: d directory, l symlink, f
// regular file, p fifo, s socket, c and b devices, ? unknown (or gone).
char KindOfMode(mode_t m) {
  if (S_ISDIR(m)) return 'd';
  if (S_ISLNK(m)) return 'l';
  if (S_ISREG(m)) return 'f';
  if (S_ISFIFO(m)) return 'p';
  if (S_ISSOCK(m)) return 's';
  if (S_ISCHR(m)) return 'c';
  if (S_ISBLK(m)) return 'b';
  return '?';
}

char KindOfEntry(int dirfd, const struct dirent* e) {
#ifdef DT_UNKNOWN
  switch (e->d_type) {
    case DT_DIR: return 'd';
    case DT_LNK: return 'l';
    case DT_REG: return 'f';
    case DT_FIFO: return 'p';
    case DT_SOCK: return 's';
    case DT_CHR: return 'c';
    case DT_BLK: return 'b';
    default: break;
  }
#endif
  // The filesystem did not say: ask the entry itself, without following a link.
  struct stat st;
  if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return '?';
  return KindOfMode(st.st_mode);
}

// readDirSorted(path) -> { names, kinds }: every entry of the directory at
// `path` except . and .., in ascending byte order of the names. Each name is
// a latin1 string (one character per byte: the exact bytes, whatever their
// encoding); kinds[i] is the letter of names[i] (KindOfEntry). Links in
// `path` itself are followed (the caller's choice of root). One crossing and
// no Buffer per name: a root of 100,000 runs read this way holds a few MB.
// Throws NativeError when the directory cannot be opened or read.
Napi::Value ReadDirSorted(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  char path[PATH_MAX + 1];
  if (info.Length() < 1 || !js::PathArg(env, info[0], path)) return env.Undefined();
  int fd;
  do {
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    js::ThrowErrno(env, errno, "open", nullptr);
    return env.Undefined();
  }
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    int err = errno;
    close(fd);
    js::ThrowErrno(env, err, "fdopendir", nullptr);
    return env.Undefined();
  }
  std::string bytes;               // every name, back to back
  std::vector<size_t> start;       // where each begins in `bytes`
  std::vector<char> kind;
  for (;;) {
    errno = 0;
    struct dirent* e = readdir(d);
    if (e == nullptr) {
      if (errno != 0) {
        int err = errno;
        closedir(d);
        js::ThrowErrno(env, err, "readdir", nullptr);
        return env.Undefined();
      }
      break;
    }
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    start.push_back(bytes.size());
    bytes.append(e->d_name);
    kind.push_back(KindOfEntry(dirfd(d), e));
  }
  closedir(d);
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

}  // namespace

void RegisterRunFiles(Napi::Env env, Napi::Object exports) {
  exports.Set("runFilesSetup", Napi::Function::New(env, Setup, "runFilesSetup"));
  exports.Set("runFiles", Napi::Function::New(env, RunFilesJs, "runFiles"));
  exports.Set("runFilesLayout", Layout(env));
  exports.Set("readDirSorted", Napi::Function::New(env, ReadDirSorted, "readDirSorted"));
}

}  // namespace rw
