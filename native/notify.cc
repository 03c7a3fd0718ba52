// runwarden native: the N-API surface of change notification (see notify.h).
//
// open(callback) returns a notifier: {add(path, mask) -> wd | -errno,
// remove(wd) -> 0 | -errno, close(), ref(), unref()}, or -errno when the
// kernel refuses a notifier (EMFILE at max_user_instances, ENOSYS where
// there is none). The pending events are read (non-blocking) on the JS
// thread and handed to `callback` as one array of {wd, mask, name} per batch.
//
// openExits(callback) returns the same kind of object for process exits
// (notify.h ExitAdd): {add(pid) -> id | -errno, remove(id), close(), ref(),
// unref()}; each exit is delivered once as {wd: id, mask: 0, name: ''}, and
// the watch is gone after it. Same waiting, batching and lifetime below.
//
// Waiting: Node-API only, no libuv (Node-API does not promise libuv, and
// runtimes that implement Node-API without it, Bun and Deno, lack it). Each
// notifier has one thread that blocks in poll(2) on the backend's descriptor
// and a wake descriptor, and nothing else. When the backend's descriptor is
// readable the thread tells the JS thread through a thread-safe function
// and waits, without polling, until the JS thread has read what is pending
// (the "armed" handshake): only the JS thread ever reads or changes the
// backend's state, so add/remove/drain keep their single-threaded meaning (a
// removed watch is never reported after remove() returned), and a
// descriptor that stays readable costs one wake-up per batch, never a spin.
// ref()/unref() are the thread-safe function's: an unref'd notifier does not
// keep the event loop alive; a ref'd one does, as long as it is open.
//
// Lifetime: an open notifier holds a strong reference to its JS object, so
// it is never collected while the kernel may still report to it. close()
// and an ending environment (a worker thread exiting or terminated without
// close(), through an environment cleanup hook) do the same thing, on the JS
// thread: mark the thread stopped and write the wake descriptor, join the
// thread, close the wake descriptor, release the thread-safe function
// (abort: a call still queued is dropped, never run), and close the
// backend's descriptors. After it, no thread and no descriptor of the
// notifier remains; the hook is synchronous, so all of this is done before
// the environment goes on ending and Node unloads a worker's addons.
#include "notify.h"

#include "addon_js.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/eventfd.h>
#endif

namespace rw {
namespace {

constexpr size_t kBatchMax = 4096;

// The waiting thread needs a few hundred bytes of stack (poll and one
// thread-safe call); 128 KiB is far more than enough on every libc, and
// keeps glibc's 8 MiB default from being reserved per notifier.
constexpr size_t kThreadStack = 128 * 1024;

struct Notifier {
  napi_env env = nullptr;
  NotifyState* state = nullptr;  // a change notifier's, or
  ExitState* exits = nullptr;    // a process-exit notifier's (exactly one is set while open)
  int fd = -1;                   // the backend's pollable descriptor (the backend owns it)
  int wake_read = -1;            // readable once close() wants the thread gone
  int wake_write = -1;           // the same descriptor as wake_read where it is an eventfd
  pthread_t thread;
  bool thread_started = false;
  napi_threadsafe_function tsfn = nullptr;
  bool hooked = false;  // the environment cleanup hook is registered, not yet run or removed
  Napi::FunctionReference callback;
  Napi::ObjectReference self;
  napi_async_context async = nullptr;
  bool closed = false;
  bool delivering = false;
  std::vector<NotifyEvent> events;

  // Shared with the thread, under `mu`.
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  bool armed = true;    // the thread may poll the backend (the JS thread has read what was pending)
  bool stop = false;    // the thread must end
  int poll_error = 0;   // the errno that ended the thread's waiting, for the JS thread to report

  ~Notifier() {
    pthread_mutex_destroy(&mu);
    pthread_cond_destroy(&cv);
  }
};

// Every open change notifier, with its environment: what an exit notifier
// reads first (OnReady). Touched only from JS threads, which are several
// when workers load the addon, hence the lock.
pthread_mutex_t g_changes_mu = PTHREAD_MUTEX_INITIALIZER;
std::vector<Notifier*> g_changes;

void ListChange(Notifier* n, bool add) {
  pthread_mutex_lock(&g_changes_mu);
  if (add) {
    g_changes.push_back(n);
  } else {
    for (size_t i = 0; i < g_changes.size(); i++) {
      if (g_changes[i] == n) {
        g_changes[i] = g_changes.back();
        g_changes.pop_back();
        break;
      }
    }
  }
  pthread_mutex_unlock(&g_changes_mu);
}

// The open change notifiers of `env` (a copy: a callback may close any).
std::vector<Notifier*> ChangesOf(napi_env env) {
  std::vector<Notifier*> out;
  pthread_mutex_lock(&g_changes_mu);
  for (Notifier* m : g_changes) {
    if (m->env == env) out.push_back(m);
  }
  pthread_mutex_unlock(&g_changes_mu);
  return out;
}

bool IsListed(Notifier* n) {
  pthread_mutex_lock(&g_changes_mu);
  bool found = false;
  for (Notifier* m : g_changes) found = found || m == n;
  pthread_mutex_unlock(&g_changes_mu);
  return found;
}

void SetArmed(Notifier* n) {
  pthread_mutex_lock(&n->mu);
  n->armed = true;
  pthread_cond_signal(&n->cv);
  pthread_mutex_unlock(&n->mu);
}

// The waiting thread: poll(2) until the backend has something or the wake
// descriptor says stop; tell the JS thread; wait to be re-armed. It touches
// nothing of the notifier but `fd`, the wake descriptor, the fields under
// `mu` and the thread-safe function.
void* WaitLoop(void* arg) {
  auto* n = static_cast<Notifier*>(arg);
#if defined(__APPLE__)
  pthread_setname_np("runwarden-notify");
#endif
  struct pollfd fds[2] = {{n->fd, POLLIN, 0}, {n->wake_read, POLLIN, 0}};
  for (;;) {
    pthread_mutex_lock(&n->mu);
    while (!n->armed && !n->stop) pthread_cond_wait(&n->cv, &n->mu);
    bool stop = n->stop;
    n->armed = false;
    pthread_mutex_unlock(&n->mu);
    if (stop) break;
    int err = 0;
    for (;;) {
      fds[0].revents = fds[1].revents = 0;
      int r = poll(fds, 2, -1);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r < 0) err = errno;
      else if (fds[1].revents != 0) return nullptr;  // only a stop writes the wake descriptor
      else if ((fds[0].revents & POLLIN) == 0 && (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) err = (fds[0].revents & POLLNVAL) != 0 ? EBADF : EIO;
      else if ((fds[0].revents & POLLIN) == 0) continue;
      break;
    }
    if (err != 0) {
      pthread_mutex_lock(&n->mu);
      n->poll_error = err;
      pthread_mutex_unlock(&n->mu);
    }
    // Non-blocking into an unbounded queue that holds at most one call (the
    // handshake): it never waits, so close() can always join this thread.
    // Anything but napi_ok means the function is closing: nobody listens.
    if (napi_call_threadsafe_function(n->tsfn, nullptr, napi_tsfn_nonblocking) != napi_ok || err != 0) break;
  }
  return nullptr;
}

// Opens the wake descriptor: an eventfd on linux, a pipe elsewhere; both
// close-on-exec and non-blocking. 0 or an errno value.
int OpenWake(Notifier* n) {
#if defined(__linux__)
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return errno;
  n->wake_read = n->wake_write = fd;
#else
  int p[2];
  if (pipe(p) != 0) return errno;
  for (int fd : p) {
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
      int e = errno;
      close(p[0]);
      close(p[1]);
      return e;
    }
  }
  n->wake_read = p[0];
  n->wake_write = p[1];
#endif
  return 0;
}

void CloseWake(Notifier* n) {
  if (n->wake_write >= 0 && n->wake_write != n->wake_read) close(n->wake_write);
  if (n->wake_read >= 0) close(n->wake_read);
  n->wake_read = n->wake_write = -1;
}

// Starts the waiting thread with every signal blocked in it, so that a
// signal meant for the process is never delivered to this thread.
int StartThread(Notifier* n) {
  pthread_attr_t attr;
  int err = pthread_attr_init(&attr);
  if (err != 0) return err;
  pthread_attr_setstacksize(&attr, kThreadStack);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  err = pthread_create(&n->thread, &attr, WaitLoop, n);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (err != 0) return err;
  n->thread_started = true;
#if defined(__linux__)
  pthread_setname_np(n->thread, "rw-notify");
#endif
  return 0;
}

// Ends the waiting thread and waits for it to be gone.
void StopThread(Notifier* n) {
  if (!n->thread_started) return;
  pthread_mutex_lock(&n->mu);
  n->stop = true;
  pthread_cond_signal(&n->cv);
  pthread_mutex_unlock(&n->mu);
  uint64_t one = 1;
  ssize_t w;
  do {
    w = write(n->wake_write, &one, sizeof one);
  } while (w < 0 && errno == EINTR);
  // EAGAIN: the wake descriptor is already full of wake-ups, which is as readable as one more.
  pthread_join(n->thread, nullptr);
  n->thread_started = false;
}

void Hook(void* arg);

// Stops everything the kernel and the thread hold for `n`. Safe to call
// twice, and from inside the callback (the batch loop checks `closed`).
void Shutdown(Notifier* n, bool from_js) {
  if (n->closed) return;
  n->closed = true;
  if (n->state != nullptr) ListChange(n, false);
  StopThread(n);
  CloseWake(n);
  if (n->tsfn != nullptr) {
    napi_release_threadsafe_function(n->tsfn, napi_tsfn_abort);
    n->tsfn = nullptr;
  }
  if (n->state != nullptr) {
    NotifyClose(n->state);
    n->state = nullptr;
  }
  if (n->exits != nullptr) {
    ExitClose(n->exits);
    n->exits = nullptr;
  }
  if (from_js) {
    if (n->hooked) {
      napi_remove_env_cleanup_hook(n->env, Hook, n);
      n->hooked = false;
    }
    if (n->async != nullptr) napi_async_destroy(n->env, n->async);
    n->async = nullptr;
    n->callback.Reset();
    n->self.Reset();
  }
}

// The environment is ending with the notifier still open.
void Hook(void* arg) {
  auto* n = static_cast<Notifier*>(arg);
  n->hooked = false;
  Shutdown(n, false);
}

void Finalize(Napi::Env env, Notifier* n) {
  if (n->hooked) {
    napi_remove_env_cleanup_hook(env, Hook, n);
    n->hooked = false;
  }
  Shutdown(n, false);
  delete n;
}

// Hands one batch to JS. Raw N-API with every status checked, never a
// throwing helper: during an environment's teardown JS may no longer be
// callable, and then the batch is dropped quietly instead of aborting the
// process.
void Call(Notifier* n, const std::vector<NotifyEvent>& events) {
  napi_env env = n->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value batch, recv, fn, result;
  bool ok = napi_create_array_with_length(env, events.size(), &batch) == napi_ok;
  for (size_t i = 0; ok && i < events.size(); i++) {
    const NotifyEvent& e = events[i];
    napi_value o, wd, mask, name;
    ok = napi_create_object(env, &o) == napi_ok && napi_create_int32(env, e.wd, &wd) == napi_ok &&
         napi_create_double(env, static_cast<double>(e.mask), &mask) == napi_ok &&
         napi_create_string_utf8(env, e.name.data(), e.name.size(), &name) == napi_ok &&
         napi_set_named_property(env, o, "wd", wd) == napi_ok && napi_set_named_property(env, o, "mask", mask) == napi_ok &&
         napi_set_named_property(env, o, "name", name) == napi_ok && napi_set_element(env, batch, static_cast<uint32_t>(i), o) == napi_ok;
  }
  ok = ok && !n->self.IsEmpty() && !n->callback.IsEmpty() && napi_get_reference_value(env, n->self, &recv) == napi_ok &&
       napi_get_reference_value(env, n->callback, &fn) == napi_ok && recv != nullptr && fn != nullptr;
  if (ok) {
    napi_value argv[1] = {batch};
    napi_status st = napi_make_callback(env, n->async, recv, fn, 1, argv, &result);
    bool pending = false;
    if (st != napi_ok && napi_is_exception_pending(env, &pending) == napi_ok && pending) {
      // A throwing callback is the program's error, not ours: report it the
      // way Node reports an exception from any callback.
      napi_value err;
      if (napi_get_and_clear_last_exception(env, &err) == napi_ok) napi_fatal_exception(env, err);
    }
  }
  napi_close_handle_scope(env, scope);
}

// Reads what is pending and hands it to JS, one batch per callback, until the
// kernel has nothing more or the notifier was closed from a callback.
void Deliver(Notifier* n) {
  if (n->closed || n->delivering) return;
  n->delivering = true;
  for (;;) {
    n->events.clear();
    bool more = false;
    int err = n->exits != nullptr ? ExitDrain(n->exits, &n->events, kBatchMax, &more) : NotifyDrain(n->state, &n->events, kBatchMax, &more);
    if (err != 0) {
      // Reported as one event with wd -2 and the errno as its mask: the
      // TypeScript side falls back to polling.
      n->events.clear();
      n->events.push_back(NotifyEvent{-2, static_cast<uint32_t>(err), std::string()});
      more = false;
    }
    if (n->events.empty()) break;
    Call(n, n->events);
    if (n->closed || err != 0 || !more) break;
  }
  n->delivering = false;
}

// The thread-safe function's call, on the JS thread: the backend's
// descriptor was readable (or the thread's poll failed). `env` is null when
// Node drops a queued call of a released function: then `context` may be
// gone, and nothing is touched.
void OnReady(napi_env env, napi_value /*js_callback*/, void* context, void* /*data*/) {
  if (env == nullptr) return;
  auto* n = static_cast<Notifier*>(context);
  if (n->closed) return;
  pthread_mutex_lock(&n->mu);
  int err = n->poll_error;
  pthread_mutex_unlock(&n->mu);
  if (err != 0) {
    // The thread has ended; the TypeScript side falls back to polling.
    Call(n, std::vector<NotifyEvent>{NotifyEvent{-2, static_cast<uint32_t>(err), std::string()}});
    return;
  }
  if (n->exits != nullptr) {
    // A process's exit is told after the changes it made: the kernel queues
    // the events of its last closes (exit_files) before its pidfd or kqueue
    // exit filter fires (exit_notify), but each notifier has its own thread,
    // and the two threads reach the event loop in either order. So the
    // environment's change notifiers are read first (non-blocking; nothing
    // pending is nothing), as one poll of both descriptors would have.
    for (Notifier* m : ChangesOf(n->env)) {
      if (n->closed) return;
      if (IsListed(m) && !m->closed) Deliver(m);
    }
    if (n->closed) return;
  }
  Deliver(n);
  if (!n->closed) SetArmed(n);
}

Notifier* Of(const Napi::CallbackInfo& info) { return static_cast<Notifier*>(info.Data()); }

void ThrowArg(Napi::Env env, const char* code, const char* msg) {
  Napi::Error e = Napi::TypeError::New(env, msg);
  e.Set("code", Napi::String::New(env, code));
  e.ThrowAsJavaScriptException();
}

Napi::Value Add(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Notifier* n = Of(info);
  if (info.Length() < 2 || !(info[0].IsString() || info[0].IsBuffer()) || !info[1].IsNumber()) {
    ThrowArg(env, "ERR_INVALID_ARG_TYPE", "add(path, mask): a string or a Buffer, and a number");
    return env.Undefined();
  }
  // A Buffer is the path's exact bytes: a directory whose name is not UTF-8 is watched by that name.
  char path[PATH_MAX + 1];
  if (!js::PathArg(env, info[0], path)) return env.Undefined();
  if (path[0] == '\0') {
    ThrowArg(env, "ERR_INVALID_ARG_VALUE", "add(path, mask): path is empty");
    return env.Undefined();
  }
  double m = info[1].As<Napi::Number>().DoubleValue();
  if (!(m >= 0 && m <= 4294967295.0) || m != static_cast<double>(static_cast<uint32_t>(m))) {
    ThrowArg(env, "ERR_OUT_OF_RANGE", "add(path, mask): mask must be a 32-bit unsigned integer");
    return env.Undefined();
  }
  if (n->closed) return Napi::Number::New(env, -EBADF);
  int wd = -1;
  int err = NotifyAdd(n->state, path, static_cast<uint32_t>(m), &wd);
  return Napi::Number::New(env, err != 0 ? -err : wd);
}

Napi::Value Remove(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Notifier* n = Of(info);
  if (info.Length() < 1 || !info[0].IsNumber()) {
    ThrowArg(env, "ERR_INVALID_ARG_TYPE", "remove(wd): a number");
    return env.Undefined();
  }
  if (n->closed) return Napi::Number::New(env, -EBADF);
  int id = info[0].As<Napi::Number>().Int32Value();
  int err = n->exits != nullptr ? ExitRemove(n->exits, id) : NotifyRemove(n->state, id);
  return Napi::Number::New(env, -err);
}

Napi::Value AddPid(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Notifier* n = Of(info);
  if (info.Length() < 1 || !info[0].IsNumber()) {
    ThrowArg(env, "ERR_INVALID_ARG_TYPE", "add(pid): a number");
    return env.Undefined();
  }
  double p = info[0].As<Napi::Number>().DoubleValue();
  if (!(p >= 1 && p <= 2147483647.0) || p != static_cast<double>(static_cast<int>(p))) {
    ThrowArg(env, "ERR_OUT_OF_RANGE", "add(pid): pid must be an integer from 1 to 2^31-1");
    return env.Undefined();
  }
  if (n->closed) return Napi::Number::New(env, -EBADF);
  int id = -1;
  int err = ExitAdd(n->exits, static_cast<int>(p), &id);
  return Napi::Number::New(env, err != 0 ? -err : id);
}

Napi::Value Close(const Napi::CallbackInfo& info) {
  Shutdown(Of(info), true);
  return info.Env().Undefined();
}

Napi::Value Ref(const Napi::CallbackInfo& info) {
  Notifier* n = Of(info);
  if (n->tsfn != nullptr) napi_ref_threadsafe_function(info.Env(), n->tsfn);
  return info.Env().Undefined();
}

Napi::Value Unref(const Napi::CallbackInfo& info) {
  Notifier* n = Of(info);
  if (n->tsfn != nullptr) napi_unref_threadsafe_function(info.Env(), n->tsfn);
  return info.Env().Undefined();
}

// Opens a notifier of either kind: `exits` picks process exits over changes.
Napi::Value OpenKind(const Napi::CallbackInfo& info, bool exits) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    ThrowArg(env, "ERR_INVALID_ARG_TYPE", exits ? "openExits(callback): a function" : "open(callback): a function");
    return env.Undefined();
  }
  NotifyState* state = nullptr;
  ExitState* xstate = nullptr;
  int fd = -1;
  int err = exits ? ExitOpen(&xstate, &fd) : NotifyOpen(&state, &fd);
  if (err != 0) return Napi::Number::New(env, -err);
  auto* n = new Notifier();
  n->env = env;
  n->state = state;
  n->exits = xstate;
  n->fd = fd;
  Napi::Object obj = Napi::Object::New(env);
  obj.Set("add", exits ? Napi::Function::New(env, AddPid, "add", n) : Napi::Function::New(env, Add, "add", n));
  obj.Set("remove", Napi::Function::New(env, Remove, "remove", n));
  obj.Set("close", Napi::Function::New(env, Close, "close", n));
  obj.Set("ref", Napi::Function::New(env, Ref, "ref", n));
  obj.Set("unref", Napi::Function::New(env, Unref, "unref", n));
  obj.AddFinalizer(Finalize, n);
  napi_value name = Napi::String::New(env, exits ? "runwarden:exits" : "runwarden:notify");
  err = OpenWake(n);
  if (err == 0 && napi_create_threadsafe_function(env, nullptr, obj, name, 0, 1, nullptr, nullptr, n, OnReady, &n->tsfn) != napi_ok) {
    n->tsfn = nullptr;
    err = ENOMEM;
  }
  if (err == 0) err = StartThread(n);
  if (err != 0) {
    Shutdown(n, false);
    return Napi::Number::New(env, -err);
  }
  n->hooked = napi_add_env_cleanup_hook(env, Hook, n) == napi_ok;
  if (state != nullptr) ListChange(n, true);
  n->callback = Napi::Persistent(info[0].As<Napi::Function>());
  n->self = Napi::Persistent(obj);
  napi_async_init(env, obj, name, &n->async);
  return obj;
}

Napi::Value Open(const Napi::CallbackInfo& info) { return OpenKind(info, false); }
Napi::Value OpenExits(const Napi::CallbackInfo& info) { return OpenKind(info, true); }

}  // namespace

Napi::Object NotifyExports(Napi::Env env) {
  Napi::Object mask = Napi::Object::New(env);
  for (size_t i = 0; i < kNotifyMaskCount; i++) mask.Set(kNotifyMasks[i].name, Napi::Number::New(env, kNotifyMasks[i].bit));
  mask.Freeze();
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", Napi::String::New(env, kNotifyBackend));
  o.Set("mask", mask);
  o.Set("open", Napi::Function::New(env, Open, "open"));
  o.Set("exitBackend", Napi::String::New(env, kExitBackend));
  o.Set("openExits", Napi::Function::New(env, OpenExits, "openExits"));
  o.Freeze();
  return o;
}

}  // namespace rw
