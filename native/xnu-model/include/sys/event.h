// XNU model: <sys/event.h>, kqueue(2) and kevent(2) as darwin declares them.
//
// Values and layout copied from xnu bsd/sys/event.h (struct kevent is
// packed to 4, as there). Only what runwarden's darwin sources use is
// implemented (native/xnu-model/kqueue.cc): EVFILT_VNODE and EVFILT_PROC.
//
// kqueue(2): "Calling close() on a file descriptor will remove any kevents
// that reference the descriptor." The model learns of a close by the
// function-like macro below, so only sources that include this header (the
// darwin notifier) have their closes seen; that is where every watched
// descriptor is opened and closed.
#ifndef XNU_MODEL_SYS_EVENT_H_
#define XNU_MODEL_SYS_EVENT_H_

#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define EVFILT_READ (-1)
#define EVFILT_WRITE (-2)
#define EVFILT_VNODE (-4)
#define EVFILT_PROC (-5)

#pragma pack(4)
struct kevent {
  uintptr_t ident;
  int16_t filter;
  uint16_t flags;
  uint32_t fflags;
  intptr_t data;
  void* udata;
};
#pragma pack()

#define EV_SET(kevp, a, b, c, d, e, f) \
  do {                                 \
    struct kevent* __kevp__ = (kevp);  \
    __kevp__->ident = (a);             \
    __kevp__->filter = (b);            \
    __kevp__->flags = (c);             \
    __kevp__->fflags = (d);            \
    __kevp__->data = (e);              \
    __kevp__->udata = (f);             \
  } while (0)

#define EV_ADD 0x0001
#define EV_DELETE 0x0002
#define EV_ENABLE 0x0004
#define EV_DISABLE 0x0008
#define EV_ONESHOT 0x0010
#define EV_CLEAR 0x0020
#define EV_RECEIPT 0x0040
#define EV_DISPATCH 0x0080
#define EV_EOF 0x8000
#define EV_ERROR 0x4000

#define NOTE_DELETE 0x00000001
#define NOTE_WRITE 0x00000002
#define NOTE_EXTEND 0x00000004
#define NOTE_ATTRIB 0x00000008
#define NOTE_LINK 0x00000010
#define NOTE_RENAME 0x00000020
#define NOTE_REVOKE 0x00000040
#define NOTE_FUNLOCK 0x00000100

#define NOTE_EXIT 0x80000000u
#define NOTE_FORK 0x40000000
#define NOTE_EXEC 0x20000000

#ifdef __cplusplus
extern "C" {
#endif
int kqueue(void);
int kevent(int kq, const struct kevent* changelist, int nchanges, struct kevent* eventlist, int nevents, const struct timespec* timeout);
int xnu_model_close(int fd);
#ifdef __cplusplus
}
#endif

#ifndef XNU_MODEL_INTERNAL
#define close(fd) xnu_model_close(fd)
#endif

#endif  // XNU_MODEL_SYS_EVENT_H_
