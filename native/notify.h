// runwarden native: change notification (inotify on linux), the seam.
//
// notify.cc is the N-API surface, common to every platform: a notifier
// object whose descriptor one thread per notifier waits on with poll(2) (one
// thread per notifier, not per watched run; nothing blocks the event loop),
// telling the JS thread through a Node-API thread-safe function, and a JS
// callback that receives each batch of events as {wd, mask, name}.
// What differs between kernels is below, one file per platform, chosen by
// binding.gyp's conditions:
//
//   notify_linux.cc   inotify(7). Built and tested.
//   notify_darwin.cc  kqueue(2) EVFILT_VNODE. UNTESTED: written, never
//                     compiled or run here. kqueue has no close-after-write
//                     event, so on darwin a leg's death is found by polling.
//   notify_other.cc   nothing: open() reports ENOSYS ("unsupported").
//
// Expected answers are values: an add that the kernel refuses (ENOSPC when
// max_user_watches is reached, ENOENT for a path that went away) returns
// -errno; nothing here throws except for a bad argument. No policy here:
// which paths to watch and what an event means is decided in TypeScript.
#ifndef RUNWARDEN_NOTIFY_H_
#define RUNWARDEN_NOTIFY_H_

#include <napi.h>
#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace rw {

// One event as the kernel reported it. `wd` is the watch it belongs to (-1
// for a queue overflow), `name` the entry inside a watched directory ("" for
// the watched path itself).
struct NotifyEvent {
  int wd;
  uint32_t mask;
  std::string name;
};

// The event bits TypeScript reads, by name, with this platform's values.
struct NotifyMaskName {
  const char* name;
  uint32_t bit;
};

// "inotify", "kqueue" or "unsupported".
extern const char* const kNotifyBackend;
extern const NotifyMaskName kNotifyMasks[];
extern const size_t kNotifyMaskCount;

// The platform's notifier state (a descriptor poll(2) can wait on, and whatever
// the platform needs per watch).
struct NotifyState;

// Each returns 0 or an errno value.
int NotifyOpen(NotifyState** out, int* poll_fd);
int NotifyAdd(NotifyState* st, const char* path, uint32_t mask, int* wd);
int NotifyRemove(NotifyState* st, int wd);
// Appends pending events to `out` (at most about `max`). Returns 0 when
// nothing more is pending right now, EAGAIN-free; *more is set when it
// stopped at `max` with events left. An errno on failure.
int NotifyDrain(NotifyState* st, std::vector<NotifyEvent>* out, size_t max, bool* more);
void NotifyClose(NotifyState* st);

// Process exits, the second notifier kind: a descriptor poll(2) can wait on that
// becomes readable when a watched process has exited. linux: an epoll
// instance holding one pidfd (pidfd_open(2), linux >= 5.3) per watched pid;
// darwin: a kqueue with one EVFILT_PROC/NOTE_EXIT filter per pid; elsewhere
// ENOSYS. An exit says only that *that* process ended: what it means (a
// reason to probe a lock again, never a verdict) is decided in TypeScript.
// Each watch reports once, as an event whose wd is the watch's id, and is
// then gone (its descriptor closed), so a removed or fired id is never
// reported. The backend's name, "pidfd", "kqueue" or "unsupported".
extern const char* const kExitBackend;
struct ExitState;
int ExitOpen(ExitState** out, int* poll_fd);
// ESRCH: no such process (already exited, or not visible from this pid
// namespace); ENOSYS: no process watch on this kernel. *id is the watch.
int ExitAdd(ExitState* st, int pid, int* id);
// EINVAL for an id that is not (or no longer) watched.
int ExitRemove(ExitState* st, int id);
int ExitDrain(ExitState* st, std::vector<NotifyEvent>* out, size_t max, bool* more);
void ExitClose(ExitState* st);

// The `notify` export: { backend, mask, open(callback), exitBackend, openExits(callback) }.
Napi::Object NotifyExports(Napi::Env env);

}  // namespace rw

#endif  // RUNWARDEN_NOTIFY_H_
