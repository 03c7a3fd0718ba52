// XNU model: <sys/resource.h>, getrlimit(2) as darwin answers it.
//
// xnu enforces MIN(RLIMIT_NOFILE, kern.maxfilesperproc) when it hands out a
// descriptor (bsd/kern/kern_resource.c dosetrlimit: "The real NOFILE limits
// enforced by the kernel is capped at MIN(RLIMIT_NOFILE, maxfilesperproc)";
// proc_limitgetcur_nofile), but setrlimit(2) stores, and getrlimit(2) answers,
// the soft limit as it was set, uncapped: Node raises it at start-up to about
// a million on a Mac. The model caps linux's own soft RLIMIT_NOFILE at the
// modelled kern.maxfilesperproc when the addon loads (sys.cc), so an open
// past it fails with EMFILE as on a Mac, and its getrlimit answers the soft
// limit as it was before the cap, as darwin's does.
//
// NOT modelled: setrlimit(2) through the model (the darwin sources never call
// it); a limit changed by another process (prlimit(1)) after the addon loaded
// is answered as linux has it.
#ifndef XNU_MODEL_SYS_RESOURCE_H_
#define XNU_MODEL_SYS_RESOURCE_H_
#include_next <sys/resource.h>

#ifdef __cplusplus
extern "C" {
#endif
int xnu_getrlimit(int resource, struct rlimit* rl);
#ifdef __cplusplus
}
#endif
#ifndef XNU_MODEL_INTERNAL
#define getrlimit(resource, rl) xnu_getrlimit(resource, rl)
#endif

#endif  // XNU_MODEL_SYS_RESOURCE_H_
