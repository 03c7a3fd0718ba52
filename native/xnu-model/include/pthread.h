// XNU model: <pthread.h>, with darwin's one-argument pthread_setname_np.
//
// pthread_setname_np(3) on darwin: "int pthread_setname_np(const char *name)"
// names the calling thread only (<pthread.h>, macOS 10.6+). Modelled by
// linux's two-argument form on pthread_self(); linux truncates a name past
// 15 bytes where darwin allows 63 (MAXTHREADNAMESIZE 64), so a longer name
// fails with ERANGE in the model, not on darwin.
#ifndef XNU_MODEL_PTHREAD_H_
#define XNU_MODEL_PTHREAD_H_
#include_next <pthread.h>

#ifdef __cplusplus
inline int pthread_setname_np(const char* name) { return pthread_setname_np(pthread_self(), name); }
#endif

#endif  // XNU_MODEL_PTHREAD_H_
