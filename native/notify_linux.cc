// runwarden native, linux: change notification by inotify(7), and process
// exits by pidfd_open(2) (notify.h). Built and tested on every CI run.
//
// One inotify instance per notifier, non-blocking and close-on-exec, so the
// descriptor can be polled by the notifier's thread and read until EAGAIN without ever
// blocking. The mask bits are the kernel's own (IN_CLOSE_WRITE, ...),
// exported by name so TypeScript never copies a number.
#include <errno.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <limits.h>

#include <map>

#include "notify.h"

// glibc headers older than the kernel may lack the number; it is the same on
// every architecture (the unified syscall table, linux 5.3).
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace rw {

const char* const kNotifyBackend = "inotify";

const NotifyMaskName kNotifyMasks[] = {
    {"access", IN_ACCESS},          {"modify", IN_MODIFY},         {"attrib", IN_ATTRIB},
    {"closeWrite", IN_CLOSE_WRITE}, {"closeNoWrite", IN_CLOSE_NOWRITE}, {"open", IN_OPEN},
    {"movedFrom", IN_MOVED_FROM},   {"movedTo", IN_MOVED_TO},      {"create", IN_CREATE},
    {"delete", IN_DELETE},          {"deleteSelf", IN_DELETE_SELF}, {"moveSelf", IN_MOVE_SELF},
    {"unmount", IN_UNMOUNT},        {"queueOverflow", IN_Q_OVERFLOW}, {"ignored", IN_IGNORED},
    {"onlyDir", IN_ONLYDIR},        {"dontFollow", IN_DONT_FOLLOW}, {"exclUnlink", IN_EXCL_UNLINK},
    {"isDir", IN_ISDIR},
};
const size_t kNotifyMaskCount = sizeof kNotifyMasks / sizeof kNotifyMasks[0];

struct NotifyState {
  int fd = -1;
  // Big enough for many events at once, aligned for struct inotify_event.
  alignas(struct inotify_event) char buf[64 * 1024];
};

int NotifyOpen(NotifyState** out, int* poll_fd) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return errno;
  auto* st = new NotifyState();
  st->fd = fd;
  *out = st;
  *poll_fd = fd;
  return 0;
}

int NotifyAdd(NotifyState* st, const char* path, uint32_t mask, int* wd) {
  int r = inotify_add_watch(st->fd, path, mask);
  if (r < 0) return errno;
  *wd = r;
  return 0;
}

int NotifyRemove(NotifyState* st, int wd) {
  if (inotify_rm_watch(st->fd, wd) != 0) return errno;
  return 0;
}

int NotifyDrain(NotifyState* st, std::vector<NotifyEvent>* out, size_t max, bool* more) {
  *more = false;
  while (out->size() < max) {
    ssize_t n = read(st->fd, st->buf, sizeof st->buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return errno;
    }
    if (n == 0) return 0;
    for (char* p = st->buf; p < st->buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      // `name` is NUL-padded to `len` bytes; empty when the event is about
      // the watched path itself.
      out->push_back(NotifyEvent{ev->wd, ev->mask, ev->len > 0 ? std::string(ev->name) : std::string()});
      p += sizeof(struct inotify_event) + ev->len;
    }
  }
  *more = true;
  return 0;
}

void NotifyClose(NotifyState* st) {
  if (st->fd >= 0) close(st->fd);
  delete st;
}

// --- process exits ---------------------------------------------------------
//
// One epoll instance per exit notifier, holding each watched process's pidfd
// (level-triggered EPOLLIN: a pidfd is readable once its process has
// exited), so the notifier's thread polls one descriptor however many processes are
// watched. A pidfd that reported is taken out of the epoll set and closed in
// the same drain (otherwise it stays readable and the loop would spin). The
// watch's id is a counter, not the pidfd's number: the drain closes pidfds
// before JavaScript sees the batch, so a watch added while the batch is
// being told may get a closed pidfd's number, and must not get an id that a
// later event of the same batch still carries.

const char* const kExitBackend = "pidfd";

struct ExitState {
  int ep = -1;
  int last_id = 0;
  std::map<int, int> pidfds;  // id -> pidfd
};

int ExitOpen(ExitState** out, int* poll_fd) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return errno;
  auto* st = new ExitState();
  st->ep = ep;
  *out = st;
  *poll_fd = ep;
  return 0;
}

int ExitAdd(ExitState* st, int pid, int* id) {
  // pidfd_open sets O_CLOEXEC itself. ENOSYS before linux 5.3; ESRCH when no
  // such process is visible from this pid namespace.
  long fd = syscall(SYS_pidfd_open, static_cast<long>(pid), 0L);
  if (fd < 0) return errno;
  int next = st->last_id;
  do {
    next = next >= INT_MAX ? 1 : next + 1;
  } while (st->pidfds.count(next) != 0);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = static_cast<uint64_t>(next);
  if (epoll_ctl(st->ep, EPOLL_CTL_ADD, static_cast<int>(fd), &ev) != 0) {
    int err = errno;
    close(static_cast<int>(fd));
    return err;
  }
  st->last_id = next;
  st->pidfds[next] = static_cast<int>(fd);
  *id = next;
  return 0;
}

int ExitRemove(ExitState* st, int id) {
  auto it = st->pidfds.find(id);
  if (it == st->pidfds.end()) return EINVAL;
  close(it->second);  // closing the last reference removes it from the epoll set
  st->pidfds.erase(it);
  return 0;
}

int ExitDrain(ExitState* st, std::vector<NotifyEvent>* out, size_t max, bool* more) {
  *more = false;
  struct epoll_event evs[64];
  while (out->size() < max) {
    int n = epoll_wait(st->ep, evs, 64, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    for (int i = 0; i < n; i++) {
      int id = static_cast<int>(evs[i].data.u64);
      auto it = st->pidfds.find(id);
      if (it == st->pidfds.end()) continue;
      int fd = it->second;
      st->pidfds.erase(it);
      epoll_ctl(st->ep, EPOLL_CTL_DEL, fd, nullptr);
      close(fd);
      out->push_back(NotifyEvent{id, 0, std::string()});
    }
  }
  *more = true;
  return 0;
}

void ExitClose(ExitState* st) {
  for (auto& p : st->pidfds) close(p.second);
  if (st->ep >= 0) close(st->ep);
  delete st;
}

}  // namespace rw
