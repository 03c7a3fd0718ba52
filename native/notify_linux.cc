// runwarden native, linux: change notification by inotify(7) (notify.h).
// Built and tested on every CI run.
//
// One inotify instance per notifier, non-blocking and close-on-exec, so the
// descriptor can be polled by libuv and read until EAGAIN without ever
// blocking. The mask bits are the kernel's own (IN_CLOSE_WRITE, ...),
// exported by name so TypeScript never copies a number.
#include <errno.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "notify.h"

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

}  // namespace rw
