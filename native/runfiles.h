// runwarden native: a run directory's two files in one crossing, the part
// every platform shares (runfiles_js.cc: the N-API surface) and what each
// platform's reader fills (native/runfiles.cc on POSIX, native/win/runfiles.cc
// on Windows): the slots and statuses TypeScript reads the facts by
// (src/kernel/runfiles.ts, through runFilesLayout).
#ifndef RUNWARDEN_RUNFILES_H_
#define RUNWARDEN_RUNFILES_H_

#include <napi.h>

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace rw {
namespace runfiles {

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

// The handle runFilesSetup returned, or null with a usage error thrown.
RunFiles* Handle(const Napi::CallbackInfo& info);
// Which files to read (argument i): bit 0 the stream, bit 1 the snapshot.
bool WantArg(const Napi::CallbackInfo& info, size_t i, int* want);
// Clears the slots of file `which` (not asked).
void NotAsked(RunFiles* rf, int which);
// Names collected by a directory listing (`bytes` holds them back to back,
// name i beginning at start[i]; `start` gains the end), sorted in ascending byte order, as readDirSorted answers them:
// { names: latin1 strings, kinds: one letter per name }.
Napi::Value SortedNames(Napi::Env env, const std::string& bytes, std::vector<size_t>& start, const std::vector<char>& kind);

// Each platform's: runFiles(handle, path, want) and readDirSorted(path).
Napi::Value Read(const Napi::CallbackInfo& info);
Napi::Value ReadDirSorted(const Napi::CallbackInfo& info);

}  // namespace runfiles
}  // namespace rw

#endif  // RUNWARDEN_RUNFILES_H_
