// XNU model: kqueue(2) and kevent(2) on linux, for the darwin notifier
// (native/notify_darwin.cc) built and run by scripts/darwin-model.mjs.
//
// A kqueue is an epoll instance (so it is a descriptor that poll(2) reports
// readable while events are pending, as a kqueue is) holding one inotify(7)
// instance for every EVFILT_VNODE filter, one pidfd per EVFILT_PROC filter,
// and an eventfd that stays readable while filters have fired but were not
// yet returned. Rules, each from Apple's kqueue(2) or xnu:
//
// - kqueue(2) EVFILT_VNODE "Takes a file descriptor as the identifier and
//   the events to watch for in fflags": NOTE_DELETE "The unlink() system call
//   was called on the file referenced by the descriptor"; NOTE_WRITE "A write
//   occurred on the file referenced by the descriptor"; NOTE_EXTEND "The file
//   referenced by the descriptor was extended"; NOTE_ATTRIB "The file
//   referenced by the descriptor had its attributes changed"; NOTE_LINK "The
//   link count on the file changed"; NOTE_RENAME "The file referenced by the
//   descriptor was renamed"; NOTE_REVOKE "Access to the file was revoked via
//   revoke(2) or the underlying file system was unmounted".
// - A directory is written when an entry is created, removed or renamed in
//   it (xnu vnode_notify from the create/remove/rename paths), and only
//   then: a write to a file INSIDE the directory is an event of that file's
//   vnode, never of the directory's. A subdirectory made or removed changes
//   the directory's link count too (NOTE_LINK).
// - A write posts NOTE_WRITE, and NOTE_EXTEND as well when it grew the file
//   (xnu VNOP_WRITE, bsd/vfs/kpi_vfs.c: post_event_if_success(vp, _err,
//   NOTE_WRITE)). An unlink, or a rename that replaces the file, posts
//   NOTE_DELETE to the file's own filters although descriptors keep it.
// - A truncation (ftruncate(2), truncate(2), an open with O_TRUNC) is a
//   change of the file's size attribute: xnu posts NOTE_ATTRIB only
//   (VNOP_SETATTR, bsd/vfs/kpi_vfs.c: post_event_if_success(vp, _err,
//   NOTE_ATTRIB)), never NOTE_WRITE. linux says IN_MODIFY for it, as for a
//   write: the model tells them apart by the size, so a file found smaller
//   than it was is announced NOTE_ATTRIB alone.
// - An unmount: a descriptor opened O_EVTONLY does not keep its volume busy
//   (bsd/vfs/vfs_subr.c: vnode_ref_ext counts it in v_kusecount, and vflush
//   reclaims a vnode whose only uses are those), and the reclaim posts
//   NOTE_REVOKE (vclean: KNOTE(&vp->v_knotes, NOTE_REVOKE)), which ends the
//   filter with EV_EOF|EV_ONESHOT (bsd/vfs/vfs_vnops.c filt_vnode_common).
//   linux cannot let a descriptor not hold its mount, so the model's
//   O_EVTONLY descriptors keep an ordinary umount(8) from succeeding; a lazy
//   one (umount -l) detaches the mount at once, and the model, told by the
//   mount table (/proc/self/mountinfo, which poll(2) reports as changed),
//   posts NOTE_REVOKE to every vnode filter whose descriptor's mount is no
//   longer in it.
// - kqueue(2): "Calling close() on a file descriptor will remove any kevents
//   that reference the descriptor" (see xnu_model_close).
// - EV_CLEAR: "After the event is retrieved by the user, its state is
//   reset"; fflags that fire before retrieval accumulate into one event.
//   Without EV_CLEAR (or EV_ONESHOT) a filter stays fired once it fired: xnu
//   re-activates it as soon as it is returned (bsd/kern/kern_event.c
//   knote_process: "re-activate in case there are more events"), and
//   EVFILT_VNODE keeps its fflags (filt_vnode_common: active while
//   kn_fflags != 0), so it is returned again, with the same fflags, by every
//   later kevent until it is deleted.
// - EVFILT_PROC "Takes the process ID to monitor as the identifier";
//   NOTE_EXIT "The process has exited". ERRORS: "ESRCH The specified process
//   to attach to does not exist": a process that is gone, or has exited and
//   not been reaped (xnu proc_find does not return a zombie). Once it fires,
//   xnu's filt_proc sets EV_EOF|EV_ONESHOT: the filter is deleted after it
//   is returned.
// - kevent(2): "If an error occurs while processing an element of the
//   changelist and there is enough room in the eventlist, then the event
//   will be placed in the eventlist with EV_ERROR set in flags and the system
//   error in data. Otherwise, -1 will be returned, and errno will be set".
//   EV_DELETE of a filter that is not there: ENOENT.
//
// NOT modelled: EVFILT_READ/WRITE/SIGNAL/TIMER/USER and the other filters
// (EINVAL); EV_DISPATCH, EV_RECEIPT, EV_ENABLE/EV_DISABLE (ignored);
// NOTE_EXITSTATUS and the exit status in data; NOTE_FORK/NOTE_EXEC;
// NOTE_FUNLOCK and leases; a kqueue's not being inherited by fork(2)
// (here it is closed on exec only); a truncation and a write to the same
// file between two reads of the queue (linux's events carry no size: the
// size found then decides); the order in which xnu
// returns fired filters; a queue overflow (darwin has none: the model, if
// inotify's queue overflows, fires NOTE_WRITE|NOTE_ATTRIB on every vnode
// filter, so a reader looks again). A directory removed while its parent
// cannot be watched is announced at the last close instead of at rmdir.
#define XNU_MODEL_INTERNAL 1
#include "include/sys/event.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace {

constexpr uint64_t kTagInotify = 0;
constexpr uint64_t kTagWake = 1;
constexpr uint64_t kTagMounts = 2;
constexpr uint64_t kTagPid = 3;  // kTagPid + pid
constexpr uint32_t kWatchMask = IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_DELETE_SELF;

using Key = std::pair<int16_t, uintptr_t>;  // (filter, ident)

struct Knote {
  int16_t filter = 0;
  uintptr_t ident = 0;
  uint16_t flags = 0;
  uint32_t sfflags = 0;
  void* udata = nullptr;
  uint32_t pending = 0;  // fflags fired, not yet returned
  bool queued = false;
  bool eof = false;
  // EVFILT_VNODE
  int wd = -1;
  int parent_wd = -1;
  std::string name;  // the entry name in its parent (directories)
  bool dir = false;
  off_t size = 0;
  nlink_t nlink = 0;
  bool deleted = false;
  // EVFILT_PROC
  int pidfd = -1;
};

struct Kq {
  int ep = -1;
  int in = -1;
  int wake = -1;
  int mounts = -1;  // /proc/self/mountinfo, polled for a change of the mount table
  std::set<long> mount_ids;  // the mounts in it when last read
  std::map<Key, Knote> knotes;
  std::deque<Key> fired;
  std::map<int, std::set<uintptr_t>> by_wd;        // inotify watch -> vnode idents on that inode
  std::map<int, int> wd_refs;                       // inotify watch -> uses (own inode, or parent of a directory)
  std::map<std::pair<int, std::string>, std::set<uintptr_t>> children;  // (parent watch, name) -> directory idents
};

std::mutex g_mu;
std::map<int, Kq*> g_kqs;

void Unref(Kq* kq, int wd) {
  if (wd < 0) return;
  auto it = kq->wd_refs.find(wd);
  if (it == kq->wd_refs.end()) return;
  if (--it->second > 0) return;
  kq->wd_refs.erase(it);
  inotify_rm_watch(kq->in, wd);
}

int AddWatch(Kq* kq, const char* path) {
  int wd = inotify_add_watch(kq->in, path, kWatchMask);
  if (wd < 0) return -errno;
  kq->wd_refs[wd]++;
  return wd;
}

void Fire(Kq* kq, Knote& kn, uint32_t fflags) {
  fflags &= kn.sfflags;
  if (fflags == 0) return;
  kn.pending |= fflags;
  if (!kn.queued) {
    kn.queued = true;
    kq->fired.push_back(Key{kn.filter, kn.ident});
  }
}

void DropKnote(Kq* kq, std::map<Key, Knote>::iterator it) {
  Knote& kn = it->second;
  if (kn.filter == EVFILT_VNODE) {
    auto w = kq->by_wd.find(kn.wd);
    if (w != kq->by_wd.end()) {
      w->second.erase(kn.ident);
      if (w->second.empty()) kq->by_wd.erase(w);
    }
    if (kn.parent_wd >= 0) {
      auto c = kq->children.find({kn.parent_wd, kn.name});
      if (c != kq->children.end()) {
        c->second.erase(kn.ident);
        if (c->second.empty()) kq->children.erase(c);
      }
    }
    Unref(kq, kn.wd);
    Unref(kq, kn.parent_wd);
  } else if (kn.filter == EVFILT_PROC && kn.pidfd >= 0) {
    epoll_ctl(kq->ep, EPOLL_CTL_DEL, kn.pidfd, nullptr);
    ::close(kn.pidfd);
  }
  kq->knotes.erase(it);  // a stale entry in `fired` is skipped when it is reached
}

int AddVnode(Kq* kq, const struct kevent& ch) {
  int fd = static_cast<int>(ch.ident);
  struct stat st;
  if (fstat(fd, &st) != 0) return EBADF;
  Key key{EVFILT_VNODE, ch.ident};
  auto it = kq->knotes.find(key);
  if (it != kq->knotes.end()) {  // EV_ADD of a filter already there modifies it
    it->second.sfflags = ch.fflags;
    it->second.flags = ch.flags;
    it->second.udata = ch.udata;
    return 0;
  }
  char self[64];
  snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
  int wd = AddWatch(kq, self);
  if (wd < 0) return -wd;
  Knote kn;
  kn.filter = EVFILT_VNODE;
  kn.ident = ch.ident;
  kn.flags = ch.flags;
  kn.sfflags = ch.fflags;
  kn.udata = ch.udata;
  kn.wd = wd;
  kn.dir = S_ISDIR(st.st_mode);
  kn.size = st.st_size;
  kn.nlink = st.st_nlink;
  if (kn.dir) {
    // rmdir(2) of a directory that a descriptor keeps says nothing to the
    // directory's own inotify watch until the last close: its removal is
    // seen in its parent (then its link count is 0).
    char path[PATH_MAX + 1];
    ssize_t n = readlink(self, path, PATH_MAX);
    if (n > 0 && path[0] == '/') {
      path[n] = '\0';
      char* slash = strrchr(path, '/');
      if (slash != nullptr && slash[1] != '\0') {
        kn.name = slash + 1;
        if (slash == path) slash[1] = '\0';
        else *slash = '\0';
        int pwd = AddWatch(kq, path);
        if (pwd >= 0) {
          kn.parent_wd = pwd;
          kq->children[{pwd, kn.name}].insert(ch.ident);
        }
      }
    }
  }
  kq->by_wd[wd].insert(ch.ident);
  kq->knotes.emplace(key, std::move(kn));
  return 0;
}

int AddProc(Kq* kq, const struct kevent& ch) {
  Key key{EVFILT_PROC, ch.ident};
  auto it = kq->knotes.find(key);
  if (it != kq->knotes.end()) {
    it->second.sfflags = ch.fflags;
    it->second.flags = ch.flags;
    it->second.udata = ch.udata;
    return 0;
  }
  long pid = static_cast<long>(ch.ident);
  if (pid <= 0 || pid > INT_MAX) return ESRCH;
  long fd = syscall(SYS_pidfd_open, pid, 0L);
  if (fd < 0) return errno == ESRCH ? ESRCH : errno;
  struct pollfd p = {static_cast<int>(fd), POLLIN, 0};
  if (poll(&p, 1, 0) > 0) {  // exited already (a zombie): xnu does not attach to it
    ::close(static_cast<int>(fd));
    return ESRCH;
  }
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = kTagPid + static_cast<uint64_t>(pid);
  if (epoll_ctl(kq->ep, EPOLL_CTL_ADD, static_cast<int>(fd), &ev) != 0) {
    int err = errno;
    ::close(static_cast<int>(fd));
    return err;
  }
  Knote kn;
  kn.filter = EVFILT_PROC;
  kn.ident = ch.ident;
  kn.flags = ch.flags;
  kn.sfflags = ch.fflags;
  kn.udata = ch.udata;
  kn.pidfd = static_cast<int>(fd);
  kq->knotes.emplace(key, std::move(kn));
  return 0;
}

int Apply(Kq* kq, const struct kevent& ch) {
  if (ch.filter != EVFILT_VNODE && ch.filter != EVFILT_PROC) return EINVAL;
  if (ch.flags & EV_DELETE) {
    auto it = kq->knotes.find(Key{ch.filter, ch.ident});
    if (it == kq->knotes.end()) return ENOENT;
    DropKnote(kq, it);
    return 0;
  }
  if (ch.flags & EV_ADD) return ch.filter == EVFILT_VNODE ? AddVnode(kq, ch) : AddProc(kq, ch);
  return 0;
}

// What one inotify event means for the vnode filters of its inode.
void VnodeEvent(Kq* kq, const struct inotify_event* ev) {
  if (ev->mask & IN_Q_OVERFLOW) {
    for (auto& [key, kn] : kq->knotes)
      if (kn.filter == EVFILT_VNODE) Fire(kq, kn, NOTE_WRITE | NOTE_ATTRIB);
    return;
  }
  const bool entry = ev->len > 0 && ev->name[0] != '\0';
  auto w = kq->by_wd.find(ev->wd);
  if (w != kq->by_wd.end()) {
    std::vector<uintptr_t> idents(w->second.begin(), w->second.end());
    for (uintptr_t id : idents) {
      auto it = kq->knotes.find(Key{EVFILT_VNODE, id});
      if (it == kq->knotes.end()) continue;
      Knote& kn = it->second;
      uint32_t f = 0;
      if (entry) {
        // Only entry changes write a directory; a file written inside it is not the directory's event.
        if (ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) {
          f |= NOTE_WRITE;
          if (ev->mask & IN_ISDIR) f |= NOTE_LINK;
        }
      } else {
        struct stat st;
        bool have = fstat(static_cast<int>(kn.ident), &st) == 0;
        if (ev->mask & IN_MODIFY) {
          if (have && st.st_size < kn.size) f |= NOTE_ATTRIB;  // a truncation: VNOP_SETATTR's event alone
          else f |= NOTE_WRITE;
          if (have && st.st_size > kn.size) f |= NOTE_EXTEND;
        }
        if (ev->mask & IN_ATTRIB) {
          if (have && st.st_nlink < kn.nlink) f |= NOTE_DELETE;
          else if (have && st.st_nlink > kn.nlink) f |= NOTE_LINK;
          else f |= NOTE_ATTRIB;
        }
        if (ev->mask & IN_MOVE_SELF) f |= NOTE_RENAME;
        if ((ev->mask & IN_DELETE_SELF) && !kn.deleted) f |= NOTE_DELETE;
        if (ev->mask & IN_UNMOUNT) f |= NOTE_REVOKE;
        if (have) {
          kn.size = st.st_size;
          kn.nlink = st.st_nlink;
        }
      }
      if (f & NOTE_DELETE) {
        if (kn.deleted) f &= ~static_cast<uint32_t>(NOTE_DELETE);
        kn.deleted = true;
      }
      Fire(kq, kn, f);
    }
  }
  if (entry) {
    // A watched directory removed (or replaced by a rename) in this one.
    auto c = kq->children.find({ev->wd, std::string(ev->name)});
    if (c != kq->children.end()) {
      std::vector<uintptr_t> idents(c->second.begin(), c->second.end());
      for (uintptr_t id : idents) {
        auto it = kq->knotes.find(Key{EVFILT_VNODE, id});
        if (it == kq->knotes.end() || it->second.deleted) continue;
        struct stat st;
        if (fstat(static_cast<int>(id), &st) == 0 && st.st_nlink == 0) {
          it->second.deleted = true;
          Fire(kq, it->second, NOTE_DELETE);
        }
      }
    }
  }
  if (ev->mask & IN_IGNORED) {
    kq->wd_refs.erase(ev->wd);
  }
}

// The mount id (/proc/self/fdinfo's mnt_id) of descriptor `fd`, or -1.
long MountOf(int fd) {
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
  FILE* f = fopen(p, "re");
  if (f == nullptr) return -1;
  long id = -1;
  char line[256];
  while (fgets(line, sizeof line, f) != nullptr) {
    if (sscanf(line, "mnt_id: %ld", &id) == 1) break;
  }
  fclose(f);
  return id;
}

// The ids of the mounts in this process's mount table (/proc/self/mountinfo's first field).
std::set<long> MountIds(int fd) {
  std::set<long> ids;
  if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0) return ids;
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r <= 0) break;
    text.append(buf, static_cast<size_t>(r));
  }
  for (size_t at = 0; at < text.size();) {
    ids.insert(strtol(text.c_str() + at, nullptr, 10));
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return ids;
}

// NOTE_REVOKE, with EV_EOF|EV_ONESHOT, for every vnode filter whose
// descriptor's mount is no longer in the mount table (a detached one). The
// table is read again at each gathering while vnode filters exist: poll(2)
// says once that it changed, and the notifier's own poll of the queue takes
// that notice before the queue is read.
void Revoked(Kq* kq) {
  bool vnodes = false;
  for (auto& [key, kn] : kq->knotes) vnodes = vnodes || (kn.filter == EVFILT_VNODE && !kn.eof);
  if (!vnodes || kq->mounts < 0) return;
  std::set<long> ids = MountIds(kq->mounts);
  if (ids.empty() || ids == kq->mount_ids) return;
  kq->mount_ids = ids;
  for (auto& [key, kn] : kq->knotes) {
    if (kn.filter != EVFILT_VNODE || kn.eof) continue;
    long id = MountOf(static_cast<int>(kn.ident));
    if (id < 0 || ids.count(id) > 0) continue;
    kn.eof = true;
    kn.pending |= kn.sfflags & NOTE_REVOKE;
    if (!kn.queued) {
      kn.queued = true;
      kq->fired.push_back(key);
    }
  }
}

// Reads what the kernel has pending into the filters' fired state.
void Gather(Kq* kq) {
  struct epoll_event evs[64];
  for (;;) {
    int n = epoll_wait(kq->ep, evs, 64, 0);
    if (n <= 0) break;
    bool again = false;
    for (int i = 0; i < n; i++) {
      uint64_t tag = evs[i].data.u64;
      if (tag == kTagWake) {
        uint64_t v;
        (void)!read(kq->wake, &v, sizeof v);
      } else if (tag == kTagMounts) {
        // Only a wake-up: the table is compared below.
      } else if (tag == kTagInotify) {
        alignas(struct inotify_event) char buf[16384];
        for (;;) {
          ssize_t r = read(kq->in, buf, sizeof buf);
          if (r <= 0) break;
          for (char* p = buf; p < buf + r;) {
            auto* ev = reinterpret_cast<struct inotify_event*>(p);
            VnodeEvent(kq, ev);
            p += sizeof(struct inotify_event) + ev->len;
          }
        }
      } else {
        uintptr_t pid = static_cast<uintptr_t>(tag - kTagPid);
        auto it = kq->knotes.find(Key{EVFILT_PROC, pid});
        if (it == kq->knotes.end()) continue;
        Knote& kn = it->second;
        epoll_ctl(kq->ep, EPOLL_CTL_DEL, kn.pidfd, nullptr);
        ::close(kn.pidfd);
        kn.pidfd = -1;
        kn.eof = true;
        Fire(kq, kn, NOTE_EXIT);
        if (!kn.queued) {  // not asked for NOTE_EXIT: the filter still ends with its process
          kq->knotes.erase(it);
        }
      }
      again = true;
    }
    if (!again || n < 64) break;
  }
  Revoked(kq);
}

// Moves up to `max` fired filters into `out`.
int Collect(Kq* kq, struct kevent* out, int max) {
  int n = 0;
  std::vector<Key> again;  // fired without EV_CLEAR: still fired after this call
  while (n < max && !kq->fired.empty()) {
    Key key = kq->fired.front();
    kq->fired.pop_front();
    auto it = kq->knotes.find(key);
    if (it == kq->knotes.end() || !it->second.queued) continue;
    Knote& kn = it->second;
    kn.queued = false;
    struct kevent& e = out[n++];
    e.ident = kn.ident;
    e.filter = kn.filter;
    e.flags = static_cast<uint16_t>(kn.flags | (kn.eof ? (EV_EOF | EV_ONESHOT) : 0));
    e.fflags = kn.pending;
    e.data = 0;
    e.udata = kn.udata;
    if ((kn.flags & EV_ONESHOT) || kn.eof) {
      DropKnote(kq, it);
    } else if ((kn.flags & EV_CLEAR) == 0 && kn.filter == EVFILT_VNODE) {
      again.push_back(key);
    } else {
      kn.pending = 0;
    }
  }
  for (const Key& key : again) {
    auto it = kq->knotes.find(key);
    if (it == kq->knotes.end() || it->second.queued) continue;
    it->second.queued = true;
    kq->fired.push_back(key);
  }
  // Filters left fired keep the queue's descriptor readable.
  if (!kq->fired.empty()) {
    uint64_t one = 1;
    (void)!write(kq->wake, &one, sizeof one);
  }
  return n;
}

void Destroy(Kq* kq) {
  for (auto& [key, kn] : kq->knotes)
    if (kn.pidfd >= 0) ::close(kn.pidfd);
  ::close(kq->in);
  ::close(kq->wake);
  if (kq->mounts >= 0) ::close(kq->mounts);
  ::close(kq->ep);
  delete kq;
}

}  // namespace

extern "C" int kqueue(void) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return -1;
  int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (in < 0 || wake < 0) {
    int err = errno;
    if (in >= 0) ::close(in);
    if (wake >= 0) ::close(wake);
    ::close(ep);
    errno = err;
    return -1;
  }
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = kTagInotify;
  epoll_ctl(ep, EPOLL_CTL_ADD, in, &ev);
  ev.data.u64 = kTagWake;
  epoll_ctl(ep, EPOLL_CTL_ADD, wake, &ev);
  // The mount table: poll(2) says POLLPRI|POLLERR once for each change of it (proc(5) /proc/pid/mountinfo).
  int mounts = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (mounts >= 0) {
    char buf[4096];
    while (read(mounts, buf, sizeof buf) > 0) {
    }
    struct epoll_event mev = {};
    mev.events = EPOLLPRI;
    mev.data.u64 = kTagMounts;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, mounts, &mev) != 0) {
      ::close(mounts);
      mounts = -1;
    }
  }
  auto* kq = new Kq();
  kq->ep = ep;
  kq->in = in;
  kq->wake = wake;
  kq->mounts = mounts;
  kq->mount_ids = MountIds(mounts);
  std::lock_guard<std::mutex> lock(g_mu);
  g_kqs[ep] = kq;
  return ep;
}

extern "C" int kevent(int kqfd, const struct kevent* changelist, int nchanges, struct kevent* eventlist, int nevents, const struct timespec* timeout) {
  std::unique_lock<std::mutex> lock(g_mu);
  auto found = g_kqs.find(kqfd);
  if (found == g_kqs.end()) {
    errno = EBADF;
    return -1;
  }
  Kq* kq = found->second;
  int n = 0;
  for (int i = 0; i < nchanges; i++) {
    int err = Apply(kq, changelist[i]);
    if (err == 0) continue;
    if (n < nevents) {
      struct kevent& e = eventlist[n++];
      e = changelist[i];
      e.flags = EV_ERROR;
      e.data = err;
      continue;
    }
    errno = err;
    return -1;
  }
  if (n > 0 || nevents <= 0) return n;
  long wait_ms = -1;
  if (timeout != nullptr) wait_ms = timeout->tv_sec * 1000L + timeout->tv_nsec / 1000000L;
  for (;;) {
    Gather(kq);
    n = Collect(kq, eventlist, nevents);
    if (n > 0 || wait_ms == 0) return n;
    int ep = kq->ep;
    lock.unlock();
    struct epoll_event ev;
    int r = epoll_wait(ep, &ev, 1, wait_ms < 0 ? -1 : static_cast<int>(wait_ms));
    int err = errno;
    lock.lock();
    if (g_kqs.find(kqfd) == g_kqs.end()) {
      errno = EBADF;
      return -1;
    }
    if (r < 0) {
      errno = err;
      return -1;
    }
    if (r == 0) return 0;
  }
}

// close(2) as the darwin sources that include <sys/event.h> call it: a
// kqueue closes with its filters; any other descriptor loses the
// EVFILT_VNODE filters that reference it (kqueue(2)), then is closed.
extern "C" int xnu_model_close(int fd) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto found = g_kqs.find(fd);
    if (found != g_kqs.end()) {
      Kq* kq = found->second;
      g_kqs.erase(found);
      Destroy(kq);
      return 0;
    }
    for (auto& [kfd, kq] : g_kqs) {
      auto it = kq->knotes.find(Key{EVFILT_VNODE, static_cast<uintptr_t>(fd)});
      if (it != kq->knotes.end()) DropKnote(kq, it);
    }
  }
  return ::close(fd);
}
