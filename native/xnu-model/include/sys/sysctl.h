// XNU model: <sys/sysctl.h>. Only sysctlbyname(3) of "hw.optional.avx2_0"
// (the CPU's AVX2, answered from the CPU itself); any other name is ENOENT.
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
