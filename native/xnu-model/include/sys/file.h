// XNU model: <sys/file.h>, flock(2) on darwin's one list of advisory locks.
//
// xnu keeps a file's flock(2) locks and its fcntl(2) record locks (F_SETLK,
// lockf(3), and OFD locks) on ONE list per vnode, and lf_getblock
// (bsd/kern/kern_lockf.c) walks that list without telling them apart: a
// record lock of another process blocks a flock, and a flock blocks a record
// lock. linux keeps two lists that never meet. The model's flock therefore
// asks first whether a record lock on the file would block the one asked for
// (F_GETLK over the whole file, which linux answers for POSIX and OFD locks
// alike) and answers EWOULDBLOCK if so (LOCK_NB), or waits for it to go
// (without LOCK_NB), before taking linux's flock.
//
// NOT modelled: the other direction (a record lock asked for by a process
// that is not running the darwin sources is not refused because of a flock
// taken here: that process's fcntl goes to linux directly); the instant
// between the model's look and linux's flock.
#ifndef XNU_MODEL_SYS_FILE_H_
#define XNU_MODEL_SYS_FILE_H_
#include_next <sys/file.h>

#ifdef __cplusplus
extern "C" {
#endif
int xnu_flock(int fd, int operation);
#ifdef __cplusplus
}
#endif
#ifndef XNU_MODEL_INTERNAL
// Function-like, so `struct flock` is left alone.
#define flock(fd, operation) xnu_flock(fd, operation)
#endif

#endif  // XNU_MODEL_SYS_FILE_H_
