// XNU model: <sys/sysctl.h>. sysctlbyname(3) of two names:
// - "hw.optional.avx2_0": the CPU's AVX2, answered from the CPU itself;
// - "kern.maxfilesperproc": the most descriptors a process may hold whatever
//   its RLIMIT_NOFILE (xnu bsd/kern/kern_resource.c, SYSCTL_INT
//   kern.maxfilesperproc, OPEN_MAX (10240) unless the machine's memory scales
//   it, bsd/dev/unix_startup.c bsd_scale_setup). The model's is 10240, or
//   XNU_MODEL_MAXFILESPERPROC from the environment the addon loads in (a test
//   stands in for a Mac whose limit is lower than the process's soft limit).
// Any other name is ENOENT.
#ifndef XNU_MODEL_SYS_SYSCTL_H_
#define XNU_MODEL_SYS_SYSCTL_H_
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
int sysctlbyname(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);
#ifdef __cplusplus
}
#endif
#endif  // XNU_MODEL_SYS_SYSCTL_H_
