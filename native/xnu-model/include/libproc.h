// XNU model: <libproc.h>, the three calls runwarden's holder census uses.
//
// libproc.h: proc_listpids(type, typeinfo, buffer, buffersize) fills
// `buffer` with pids and returns the bytes filled (with a NULL buffer, the
// bytes needed); proc_pidinfo(pid, PROC_PIDLISTFDS, 0, buffer, size) fills
// struct proc_fdinfo entries and returns the bytes filled;
// proc_pidfdinfo(pid, fd, PROC_PIDFDVNODEINFO, buffer, size) fills a
// struct vnode_fdinfo (the open file's flags and the vnode's stat, no path)
// and returns its size; PROC_PIDFDVNODEPATHINFO a struct
// vnode_fdinfowithpath (the same and the path, xnu vn_getpath). Each returns 0 (or
// less) on failure with errno set: ESRCH for a process that is gone, EPERM
// for another user's process when the caller is not root (xnu
// proc_pidinfo's same-user check), EBADF for a descriptor that is gone or
// is not a vnode.
#ifndef XNU_MODEL_LIBPROC_H_
#define XNU_MODEL_LIBPROC_H_
#include <stdint.h>
#include "sys/proc_info.h"
#ifdef __cplusplus
extern "C" {
#endif
int proc_listpids(uint32_t type, uint32_t typeinfo, void* buffer, int buffersize);
int proc_pidinfo(int pid, int flavor, uint64_t arg, void* buffer, int buffersize);
int proc_pidfdinfo(int pid, int fd, int flavor, void* buffer, int buffersize);
#ifdef __cplusplus
}
#endif
#endif  // XNU_MODEL_LIBPROC_H_
