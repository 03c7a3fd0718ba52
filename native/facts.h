// runwarden native: the probe's facts, and the numbers TypeScript reads them by.
//
// Each list below is written once, here, as an X-macro. The enum the C++
// uses and the frozen object the addon exports (addon.cc, `constants`) are
// both generated from it, so they cannot drift apart; src/kernel/native.ts
// checks the exported object against the names it knows when it loads the
// addon, and refuses a mismatch (ERR_RUNWARDEN_NATIVE) instead of reading a
// stage or a slot by the wrong number.
#ifndef RUNWARDEN_FACTS_H_
#define RUNWARDEN_FACTS_H_

#include <stddef.h>
#include <stdint.h>

#include "platform.h"

namespace rw {

// Bumped whenever the meaning of an exported number changes.
constexpr int kSeamVersion = 2;

// What probeFacts() returns: how far the CONTRACT §4.2 sequence got.
// X(name, value, what the out[] slots hold)
#define RW_STAGES(X)                                                   \
  X(FsNotLocal, 0)      /* out.fsType = the type (linux)            */ \
  X(FsError, 1)         /* out.errno                                */ \
  X(OpenError, 2)       /* out.errno                                */ \
  X(NotRegular, 3)      /* out.mode = st_mode                       */ \
  X(ReadError, 4)       /* out.errno                                */ \
  X(SharedGranted, 5)   /* out.headLength, out.fileSize             */ \
  X(SharedContended, 6) /* out.headLength, out.fileSize, out.recordLockPid */ \
  X(SharedError, 7)     /* out.errno, out.headLength, out.fileSize  */ \
  X(NoFlock, 8)         /* this platform has no flock(2)            */

enum Stage {
#define RW_STAGE_ENUM(name, value) k##name = value,
  RW_STAGES(RW_STAGE_ENUM)
#undef RW_STAGE_ENUM
};

// The slots of the Float64Array registered with probeSetup().
// X(C++ name, exported name, index)
#define RW_OUT_SLOTS(X)               \
  X(FsType, "fsType", 0)              \
  X(Errno, "errno", 1)                \
  X(Mode, "mode", 2)                  \
  X(HeadLength, "headLength", 3)      \
  X(FileSize, "fileSize", 4)          \
  X(RecordLockPid, "recordLockPid", 5)

enum OutSlot {
#define RW_SLOT_ENUM(name, js, value) kOut##name = value,
  RW_OUT_SLOTS(RW_SLOT_ENUM)
#undef RW_SLOT_ENUM
};
constexpr size_t kOutLength = 6;

// The operations flock() takes from TypeScript.
#define RW_FLOCK_OPS(X) \
  X(Shared, 1)          \
  X(Exclusive, 2)       \
  X(Unlock, 3)

// Whether `type` is on `list`, compared the platform's way.
bool IsLocal(const FsType& type, const LocalTypes& list);

// Mounts already judged local under the registered list, by the unique id
// the kernel never reuses (EntryStat::mount_id). A mount's filesystem never
// changes, so an entry stays true for the life of the process; a probe on a
// remembered mount skips the directory's fstatfs. Bounded: the oldest entry
// gives way. Never holds a mount judged anything but local.
struct LocalMounts {
  static constexpr size_t kSize = 16;
  uint64_t ids[kSize] = {0};
  size_t next = 0;
  bool Has(uint64_t id) const {
    for (uint64_t known : ids) {
      if (known == id) return id != 0;
    }
    return false;
  }
  void Add(uint64_t id) {
    if (id == 0 || Has(id)) return;
    ids[next] = id;
    next = (next + 1) % kSize;
  }
};

// The probe's buffers, registered once (see probeSetup in addon.cc).
struct ProbeBuffers {
  uint8_t* head = nullptr;
  size_t head_len = 0;
  double* out = nullptr;  // kOutLength slots
  // The memo for the registered list, or null (a call with a test's own list
  // neither reads nor fills it).
  LocalMounts* mounts = nullptr;
};

// Gathers, in the order of CONTRACT §4.2, the facts for the lock file at
// `lock_path` into `buf`, and returns a Stage. Creates, writes and removes
// nothing. See probe.cc.
int GatherProbeFacts(const char* lock_path, const LocalTypes& list, const ProbeBuffers& buf);
// The same for the entry `name` of the directory open as `dirfd`.
int GatherProbeFactsAt(int dirfd, const char* name, const LocalTypes& list, const ProbeBuffers& buf);

}  // namespace rw

#endif  // RUNWARDEN_FACTS_H_
