// runwarden native, any other platform: the platform seam (platform.h) with
// nothing behind it. There is no flock and no filesystem type, so every call
// reports ENOSYS; the addon still loads, and the TypeScript side answers
// `unknown` (`unsupported-platform`) and refuses to take a lock.
#include "platform.h"

#include <errno.h>
#include <fcntl.h>

namespace rw {

const char* const kPlatformName = "other";
const char* const kLockPrimitive = "none";
const bool kHasFlock = false;
const bool kFsTypeIsName = false;
const int kProbeDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

int FsTypeOfPath(const char*, FsType*) { return ENOSYS; }

int FsTypeOfFd(int, FsType*) { return ENOSYS; }

int FsTypeOfEntry(int, const char*, FsType*) { return ENOSYS; }

int StatEntry(int, const char*, EntryStat*) { return ENOSYS; }

int OpenOnDirMount(int, const char*, int, int*) { return ENOSYS; }

int Flock(int, LockKind) { return ENOSYS; }

bool ReleaseFreeMemory() { return false; }

const bool kHasProcFs = false;
const char* const kHolderTable = "none";
const bool kOneLockList = false;

int OpenFilesOnDevice(uint64_t, int, const OpenFileQuery&, std::vector<OpenFile>*, std::vector<int>*) { return ENOSYS; }

int RecordLockHolder(int, LockKind, int* pid) {
  *pid = 0;
  return 0;
}

int MaxFilesPerProcess(int64_t*) { return ENOSYS; }

}  // namespace rw
