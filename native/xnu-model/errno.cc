// XNU model: errno in darwin's numbers (include/errno.h), for the darwin
// sources. linux's errno is read and cleared at each read of the model's
// (so a later failure with the same number is still seen), and turned into
// darwin's number by name (xnu bsd/sys/errno.h); a linux error darwin has no
// name for is EIO. xnu_set_errno sets a darwin number directly, for the
// model's answers linux cannot give (EOPNOTSUPP for open(2) of a socket).
#define XNU_MODEL_INTERNAL 1
#include <errno.h>

namespace {
// Indexed by linux's number: darwin's.
const int kDarwin[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 35, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 11, 63, 77, 78, 66, 62, 5, 91, 90, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 99, 96, 101, 98, 5, 5, 71, 97, 5, 5, 5, 100, 95, 5, 94, 84, 5, 5, 5, 5, 5, 5, 5, 5, 92, 5, 5, 68, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 64, 65, 37, 36, 70, 5, 5, 5, 5, 5, 69, 5, 5, 89, 5, 5, 5, 5, 105, 104, 5, 5};
thread_local int t_darwin = 0;
}  // namespace

extern "C" int* xnu_errno(void) {
  int linux_errno = errno;
  if (linux_errno != 0) {
    t_darwin = linux_errno > 0 && linux_errno < static_cast<int>(sizeof kDarwin / sizeof kDarwin[0]) ? kDarwin[linux_errno] : 5;
    errno = 0;
  }
  return &t_darwin;
}

extern "C" void xnu_set_errno(int darwin) {
  t_darwin = darwin;
  errno = 0;
}
