// runwarden native, every POSIX platform (linux, darwin, other): process
// presence by kill(2) with signal 0 and the descriptor limit by getrlimit(2),
// the parts of the platform seam (platform.h) the POSIX systems share.
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "platform.h"

namespace rw {

namespace {
// kill(target, 0): ESRCH is gone; success or EPERM (a process exists that we
// may not signal) is present; anything else unknown.
Presence Classify(pid_t target) {
  if (kill(target, 0) == 0) return Presence::kPresent;
  int err = errno;
  if (err == ESRCH) return Presence::kGone;
  if (err == EPERM) return Presence::kPresent;
  return Presence::kUnknown;
}
}  // namespace

Presence ProcessPresence(int pid) { return Classify(static_cast<pid_t>(pid)); }

Presence GroupPresence(int pgid) { return Classify(static_cast<pid_t>(-pgid)); }

// getrlimit(RLIMIT_NOFILE): POSIX, the same call on linux and darwin, whose
// getrlimit(2) manual page documents RLIMIT_NOFILE as "the maximum number of
// open files for this process". RLIM_INFINITY is answered as infinity.
int DescriptorLimit(double* soft, double* hard) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return errno;
  auto value = [](rlim_t v) { return v == RLIM_INFINITY ? static_cast<double>(INFINITY) : static_cast<double>(v); };
  *soft = value(rl.rlim_cur);
  *hard = value(rl.rlim_max);
  return 0;
}

}  // namespace rw
