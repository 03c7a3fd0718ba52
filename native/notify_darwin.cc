// runwarden native, darwin: change notification by kqueue(2) (notify.h).
//
// UNTESTED: written against the documented kqueue/EVFILT_VNODE and
// EVFILT_PROC interfaces; compiled here for aarch64-macos and x86_64-macos
// with -Wall -Wextra -Werror (zig's cross compiler), never run on a Mac.
// binding.gyp builds it only when OS=="mac".
//
// What kqueue cannot say: there is no close-after-write event (linux's
// IN_CLOSE_WRITE), so a leg's death is announced on darwin only through its
// process's exit (EVFILT_PROC/NOTE_EXIT, below: the engine watches the pid
// that a held lock's label names) and otherwise found by the re-probe of
// open legs; and a directory reports only
// that it changed (NOTE_WRITE), not which entry, so such an event carries
// an empty name and the mask bits `modify | create`, which TypeScript reads
// as "look at this directory again". Each watch holds an O_EVTONLY
// descriptor; its number is the watch descriptor.
#include <errno.h>
#include <fcntl.h>
#include <sys/event.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include <map>

#include "notify.h"

namespace rw {

namespace {
// Synthetic bits, the same names linux uses for the meanings kqueue has.
constexpr uint32_t kModify = 1u << 1;
constexpr uint32_t kAttrib = 1u << 2;
constexpr uint32_t kCreate = 1u << 8;
constexpr uint32_t kDeleteSelf = 1u << 10;
constexpr uint32_t kMoveSelf = 1u << 11;
constexpr uint32_t kQueueOverflow = 1u << 14;
constexpr uint32_t kIgnored = 1u << 15;
constexpr uint32_t kIsDir = 1u << 30;
}  // namespace

const char* const kNotifyBackend = "kqueue";

const NotifyMaskName kNotifyMasks[] = {
    {"modify", kModify},       {"attrib", kAttrib},         {"create", kCreate},
    {"deleteSelf", kDeleteSelf}, {"moveSelf", kMoveSelf}, {"queueOverflow", kQueueOverflow},
    {"ignored", kIgnored},     {"isDir", kIsDir},
};
const size_t kNotifyMaskCount = sizeof kNotifyMasks / sizeof kNotifyMasks[0];

struct NotifyState {
  int kq = -1;
  std::map<int, bool> watches;  // descriptor -> is a directory
};

int NotifyOpen(NotifyState** out, int* poll_fd) {
  int kq = kqueue();
  if (kq < 0) return errno;
  fcntl(kq, F_SETFD, FD_CLOEXEC);
  auto* st = new NotifyState();
  st->kq = kq;
  *out = st;
  *poll_fd = kq;
  return 0;
}

int NotifyAdd(NotifyState* st, const char* path, uint32_t /*mask*/, int* wd) {
  int fd = open(path, O_EVTONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  struct stat sb;
  bool dir = fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode);
  struct kevent ch;
  EV_SET(&ch, fd, EVFILT_VNODE, EV_ADD | EV_CLEAR, NOTE_WRITE | NOTE_EXTEND | NOTE_ATTRIB | NOTE_DELETE | NOTE_RENAME | NOTE_REVOKE, 0, nullptr);
  if (kevent(st->kq, &ch, 1, nullptr, 0, nullptr) != 0) {
    int err = errno;
    close(fd);
    return err;
  }
  st->watches[fd] = dir;
  *wd = fd;
  return 0;
}

int NotifyRemove(NotifyState* st, int wd) {
  auto it = st->watches.find(wd);
  if (it == st->watches.end()) return EINVAL;
  close(wd);  // closing the descriptor removes its kevent
  st->watches.erase(it);
  return 0;
}

int NotifyDrain(NotifyState* st, std::vector<NotifyEvent>* out, size_t max, bool* more) {
  *more = false;
  struct kevent evs[64];
  struct timespec zero = {0, 0};
  while (out->size() < max) {
    int n = kevent(st->kq, nullptr, 0, evs, 64, &zero);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    for (int i = 0; i < n; i++) {
      int wd = static_cast<int>(evs[i].ident);
      auto it = st->watches.find(wd);
      if (it == st->watches.end()) continue;
      uint32_t f = evs[i].fflags;
      uint32_t mask = 0;
      if (f & (NOTE_WRITE | NOTE_EXTEND)) mask |= it->second ? (kModify | kCreate) : kModify;
      if (f & NOTE_ATTRIB) mask |= kAttrib;
      if (f & NOTE_RENAME) mask |= kMoveSelf;
      if (f & (NOTE_DELETE | NOTE_REVOKE)) mask |= kDeleteSelf | kIgnored;
      if (it->second) mask |= kIsDir;
      out->push_back(NotifyEvent{wd, mask, std::string()});
      if (f & (NOTE_DELETE | NOTE_REVOKE)) {
        close(wd);
        st->watches.erase(it);
      }
    }
  }
  *more = true;
  return 0;
}

void NotifyClose(NotifyState* st) {
  for (auto& w : st->watches) close(w.first);
  if (st->kq >= 0) close(st->kq);
  delete st;
}

// --- process exits ---------------------------------------------------------
//
// One kqueue per exit notifier, one EVFILT_PROC/NOTE_EXIT filter per watched
// pid (kqueue(2): "The process has exited"), added EV_ONESHOT so the kernel
// drops it once it fired. The watch's id is the pid itself (kqueue keys a
// filter by ident and filter, so a pid is watched at most once per queue).
// A pid that does not exist, or is no longer there, makes EV_ADD fail with
// ESRCH.

const char* const kExitBackend = "kqueue";

struct ExitState {
  int kq = -1;
  std::map<int, bool> pids;  // watched pids (the value is unused)
};

int ExitOpen(ExitState** out, int* poll_fd) {
  int kq = kqueue();
  if (kq < 0) return errno;
  fcntl(kq, F_SETFD, FD_CLOEXEC);
  auto* st = new ExitState();
  st->kq = kq;
  *out = st;
  *poll_fd = kq;
  return 0;
}

int ExitAdd(ExitState* st, int pid, int* id) {
  struct kevent ch;
  EV_SET(&ch, static_cast<uintptr_t>(pid), EVFILT_PROC, EV_ADD | EV_ONESHOT, NOTE_EXIT, 0, nullptr);
  if (kevent(st->kq, &ch, 1, nullptr, 0, nullptr) != 0) return errno;
  st->pids[pid] = true;
  *id = pid;
  return 0;
}

int ExitRemove(ExitState* st, int id) {
  auto it = st->pids.find(id);
  if (it == st->pids.end()) return EINVAL;
  st->pids.erase(it);
  struct kevent ch;
  EV_SET(&ch, static_cast<uintptr_t>(id), EVFILT_PROC, EV_DELETE, 0, 0, nullptr);
  // ENOENT/ESRCH: it fired (or the process went) meanwhile; nothing is left to remove.
  (void)kevent(st->kq, &ch, 1, nullptr, 0, nullptr);
  return 0;
}

int ExitDrain(ExitState* st, std::vector<NotifyEvent>* out, size_t max, bool* more) {
  *more = false;
  struct kevent evs[64];
  struct timespec zero = {0, 0};
  while (out->size() < max) {
    int n = kevent(st->kq, nullptr, 0, evs, 64, &zero);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    for (int i = 0; i < n; i++) {
      if (evs[i].filter != EVFILT_PROC) continue;
      int pid = static_cast<int>(evs[i].ident);
      auto it = st->pids.find(pid);
      if (it == st->pids.end()) continue;
      // EV_ERROR (the filter failed after it was added) is reported as an
      // exit too: either way the only thing to do is probe the lock again.
      if ((evs[i].flags & EV_ERROR) == 0 && (evs[i].fflags & NOTE_EXIT) == 0) continue;
      st->pids.erase(it);
      out->push_back(NotifyEvent{pid, 0, std::string()});
    }
  }
  *more = true;
  return 0;
}

void ExitClose(ExitState* st) {
  if (st->kq >= 0) close(st->kq);  // closing the queue drops every filter
  delete st;
}

}  // namespace rw
