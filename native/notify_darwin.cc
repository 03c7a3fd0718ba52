// runwarden native, darwin: change notification by kqueue(2) (notify.h).
//
// Compiled for aarch64-macos and x86_64-macos with -Wall -Wextra -Werror
// (zig's cross compiler), and run on linux against the XNU model
// (native/xnu-model/, scripts/darwin-model.mjs); never run on a Mac.
// binding.gyp builds it only when OS=="mac".
//
// What kqueue cannot say: there is no close-after-write event (linux's
// IN_CLOSE_WRITE), so a leg's death is announced on darwin only through its
// process's exit (EVFILT_PROC/NOTE_EXIT, below) and otherwise found by the
// re-probe of open legs; and a directory's NOTE_WRITE fires when an entry is
// created, removed or renamed in it, never when a file inside it is written
// (kqueue(2): NOTE_WRITE "A write occurred on the file referenced by the
// descriptor"; a directory is written by its entry changes). So a directory
// event carries an empty name and the bits `modify | create` ("look at this
// directory again"), and an append is told only by a watch on the file
// itself (NOTE_WRITE, NOTE_EXTEND: "The file referenced by the descriptor
// was extended"), which TypeScript adds for the files it follows.
//
// Each watch holds one descriptor, opened O_EVTONLY ("descriptor requested
// for event notifications only", open(2)) with O_NOFOLLOW (a symlink is
// refused with ELOOP, never followed), O_NONBLOCK (a FIFO's open never
// waits for a writer) and, when the mask asks `onlyDir`, O_DIRECTORY (a
// FIFO, socket or file where a directory should be is refused with ENOTDIR
// before anything is opened). A watch's id is a counter, not the descriptor:
// a descriptor closed by the drain (NOTE_DELETE) may be handed to the next
// open at once, while JavaScript has not yet seen the delete, and a new
// watch must never answer with an id JavaScript may still hold.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
constexpr uint32_t kOnlyDir = 1u << 24;
constexpr uint32_t kDontFollow = 1u << 25;
constexpr uint32_t kIsDir = 1u << 30;

// The next id after `id` not in `used` (ids are 1..INT_MAX, then wrap).
template <typename Map>
int NextId(int* counter, const Map& used) {
  for (;;) {
    *counter = *counter >= INT_MAX ? 1 : *counter + 1;
    if (used.find(*counter) == used.end()) return *counter;
  }
}
}  // namespace

const char* const kNotifyBackend = "kqueue";

const NotifyMaskName kNotifyMasks[] = {
    {"modify", kModify},       {"attrib", kAttrib},         {"create", kCreate},
    {"deleteSelf", kDeleteSelf}, {"moveSelf", kMoveSelf}, {"queueOverflow", kQueueOverflow},
    {"ignored", kIgnored},     {"onlyDir", kOnlyDir},       {"dontFollow", kDontFollow},
    {"isDir", kIsDir},
};
const size_t kNotifyMaskCount = sizeof kNotifyMasks / sizeof kNotifyMasks[0];

struct NotifyWatch {
  int fd;
  bool dir;
};

struct NotifyState {
  int kq = -1;
  int last_id = 0;
  std::map<int, NotifyWatch> watches;  // id -> its descriptor
  std::map<int, int> by_fd;            // descriptor -> id (the kevent's ident is the descriptor)
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

int NotifyAdd(NotifyState* st, const char* path, uint32_t mask, int* wd) {
  int flags = O_EVTONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | ((mask & kOnlyDir) != 0 ? O_DIRECTORY : 0);
  int fd;
  do {
    fd = open(path, flags);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int err = errno;
    close(fd);
    return err;
  }
  bool dir = S_ISDIR(sb.st_mode);
  if (!dir && !S_ISREG(sb.st_mode)) {  // only directories and regular files are watched
    close(fd);
    return (mask & kOnlyDir) != 0 ? ENOTDIR : EINVAL;
  }
  struct kevent ch;
  EV_SET(&ch, fd, EVFILT_VNODE, EV_ADD | EV_CLEAR, NOTE_WRITE | NOTE_EXTEND | NOTE_ATTRIB | NOTE_DELETE | NOTE_RENAME | NOTE_REVOKE, 0, nullptr);
  if (kevent(st->kq, &ch, 1, nullptr, 0, nullptr) != 0) {
    int err = errno;
    close(fd);
    return err;
  }
  int id = NextId(&st->last_id, st->watches);
  st->watches[id] = NotifyWatch{fd, dir};
  st->by_fd[fd] = id;
  *wd = id;
  return 0;
}

int NotifyRemove(NotifyState* st, int wd) {
  auto it = st->watches.find(wd);
  if (it == st->watches.end()) return EINVAL;
  st->by_fd.erase(it->second.fd);
  close(it->second.fd);  // closing the descriptor removes its kevent
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
      auto byfd = st->by_fd.find(static_cast<int>(evs[i].ident));
      if (byfd == st->by_fd.end()) continue;
      int id = byfd->second;
      auto it = st->watches.find(id);
      if (it == st->watches.end()) continue;
      uint32_t f = evs[i].fflags;
      uint32_t mask = 0;
      if (f & (NOTE_WRITE | NOTE_EXTEND)) mask |= it->second.dir ? (kModify | kCreate) : kModify;
      if (f & NOTE_ATTRIB) mask |= kAttrib;
      if (f & NOTE_RENAME) mask |= kMoveSelf;
      if (f & (NOTE_DELETE | NOTE_REVOKE)) mask |= kDeleteSelf | kIgnored;
      if (it->second.dir) mask |= kIsDir;
      if (mask == 0 || mask == kIsDir) continue;
      out->push_back(NotifyEvent{id, mask, std::string()});
      if (f & (NOTE_DELETE | NOTE_REVOKE)) {
        close(it->second.fd);
        st->by_fd.erase(byfd);
        st->watches.erase(it);
      }
    }
  }
  *more = true;
  return 0;
}

void NotifyClose(NotifyState* st) {
  for (auto& w : st->watches) close(w.second.fd);
  if (st->kq >= 0) close(st->kq);
  delete st;
}

// --- process exits ---------------------------------------------------------
//
// One kqueue per exit notifier, one EVFILT_PROC/NOTE_EXIT filter per watched
// pid (kqueue(2): "The process has exited"), added EV_ONESHOT so the kernel
// drops it once it fired. kqueue keys a filter by ident and filter, so a pid
// is watched at most once per queue; the watch's id is a counter (as for the
// change notifier), so an id JavaScript still holds is never a later watch's.
// A pid that does not exist, or is no longer there, makes EV_ADD fail with
// ESRCH ("The specified process to attach to does not exist", kqueue(2)).

const char* const kExitBackend = "kqueue";

struct ExitState {
  int kq = -1;
  int last_id = 0;
  std::map<int, int> ids;   // id -> pid
  std::map<int, int> pids;  // pid -> id
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
  auto known = st->pids.find(pid);
  if (known != st->pids.end()) {
    *id = known->second;
    return 0;
  }
  int next = NextId(&st->last_id, st->ids);
  st->ids[next] = pid;
  st->pids[pid] = next;
  *id = next;
  return 0;
}

int ExitRemove(ExitState* st, int id) {
  auto it = st->ids.find(id);
  if (it == st->ids.end()) return EINVAL;
  int pid = it->second;
  st->ids.erase(it);
  st->pids.erase(pid);
  struct kevent ch;
  EV_SET(&ch, static_cast<uintptr_t>(pid), EVFILT_PROC, EV_DELETE, 0, 0, nullptr);
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
      int id = it->second;
      st->pids.erase(it);
      st->ids.erase(id);
      out->push_back(NotifyEvent{id, 0, std::string()});
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
