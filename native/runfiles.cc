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
// here. Plain POSIX: the same on linux and darwin (Windows:
// native/win/runfiles.cc; the N-API surface both share: runfiles_js.cc).
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
#include "runfiles.h"

namespace rw {
namespace runfiles {
namespace {

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

void ReadWanted(RunFiles* rf, int dirfd, int want) {
  for (int w = 0; w < kFiles; w++) {
    if ((want & (1 << w)) != 0) {
      OneFile(rf, dirfd, w);
    } else {
      NotAsked(rf, w);
    }
  }
}

}  // namespace

// runFiles(handle, path, want) -> the run directory's descriptor (open; the
// caller closes it), or -1 when it could not be opened (errno in slot 0).
// The directory is opened O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC, as
// openDirNoFollow does; then the wanted files are read relative to it.
Napi::Value Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RunFiles* rf = Handle(info);
  char path[RW_PATH_MAX + 1];
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


namespace {

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

}  // namespace

// readDirSorted(path) -> { names, kinds }: every entry of the directory at
// `path` except . and .., in ascending byte order of the names. Each name is
// a latin1 string (one character per byte: the exact bytes, whatever their
// encoding); kinds[i] is the letter of names[i] (KindOfEntry). Links in
// `path` itself are followed (the caller's choice of root). One crossing and
// no Buffer per name: a root of 100,000 runs read this way holds a few MB.
// Throws NativeError when the directory cannot be opened or read.
Napi::Value ReadDirSorted(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  char path[RW_PATH_MAX + 1];
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
  return SortedNames(env, bytes, start, kind);
}

}  // namespace runfiles
}  // namespace rw
