// runwarden native, any other platform: no change notification (notify.h).
// open() and openExits() answer ENOSYS; the TypeScript side polls and says
// so once.
#include <errno.h>

#include "notify.h"

namespace rw {

const char* const kNotifyBackend = "unsupported";
const NotifyMaskName kNotifyMasks[] = {{"none", 0}};
const size_t kNotifyMaskCount = 0;

struct NotifyState {};

int NotifyOpen(NotifyState**, int*) { return ENOSYS; }
int NotifyAdd(NotifyState*, const char*, uint32_t, int*) { return ENOSYS; }
int NotifyRemove(NotifyState*, int) { return ENOSYS; }
int NotifyDrain(NotifyState*, std::vector<NotifyEvent>*, size_t, bool* more) {
  *more = false;
  return 0;
}
void NotifyClose(NotifyState*) {}

const char* const kExitBackend = "unsupported";
struct ExitState {};
int ExitOpen(ExitState**, int*) { return ENOSYS; }
int ExitAdd(ExitState*, int, int*) { return ENOSYS; }
int ExitRemove(ExitState*, int) { return ENOSYS; }
int ExitDrain(ExitState*, std::vector<NotifyEvent>*, size_t, bool* more) {
  *more = false;
  return 0;
}
void ExitClose(ExitState*) {}

}  // namespace rw
