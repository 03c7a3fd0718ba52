// runwarden native: the N-API surface of change notification (see notify.h).
//
// open(callback) returns a notifier: {add(path, mask) -> wd | -errno,
// remove(wd) -> 0 | -errno, close(), ref(), unref()}, or -errno when the
// kernel refuses a notifier (EMFILE at max_user_instances, ENOSYS where
// there is none). The notifier's descriptor is watched by one uv_poll_t on
// the caller's own event loop; when it is readable the pending events are
// read (non-blocking) and handed to `callback` as one array of
// {wd, mask, name} per batch. Nothing blocks and no thread is started.
//
// openExits(callback) returns the same kind of object for process exits
// (notify.h ExitAdd): {add(pid) -> id | -errno, remove(id), close(), ref(),
// unref()}; each exit is delivered once as {wd: id, mask: 0, name: ''}, and
// the watch is gone after it. Same polling, batching and lifetime below.
//
// Lifetime: an open notifier holds a strong reference to its JS object, so
// it is never collected while the kernel may still report to it; close()
// stops the poll, closes the descriptor and drops that reference. An
// environment that ends (a worker thread exiting, or terminated, without
// close()) closes it too, through an *async* cleanup hook: the poll handle's
// close completes on the loop (uv_close calls back later), and Node unloads
// a worker's addons once its environment is gone, so a close callback left
// pending would be run from unmapped code (a SIGSEGV in the worker's last
// uv_run). The hook is reported done only from that close callback, and
// Node keeps the environment, its loop and this library until then.
#include "notify.h"

#include <uv.h>

#include <errno.h>
#include <limits.h>
#include <string.h>

namespace rw {
namespace {

constexpr size_t kBatchMax = 4096;

struct Notifier;

// The poll handle, boxed apart from the notifier: its close completes after
// the notifier may be gone (collected), and the box says whom to tell.
struct PollBox {
  uv_poll_t poll;  // first: the handle's address is the box's
  Notifier* owner = nullptr;  // the notifier while it lives, for OnPoll and OnPollClosed
  napi_async_cleanup_hook_handle teardown = nullptr;  // an ending environment waiting for this close
};

struct Notifier {
  napi_env env = nullptr;
  NotifyState* state = nullptr;  // a change notifier's, or
  ExitState* exits = nullptr;    // a process-exit notifier's (exactly one is set while open)
  PollBox* poll = nullptr;  // while polled
  PollBox* closing = nullptr;  // after uv_close, until its callback
  napi_async_cleanup_hook_handle hook = nullptr;  // registered, not yet run or removed
  Napi::FunctionReference callback;
  Napi::ObjectReference self;
  napi_async_context async = nullptr;
  bool closed = false;
  bool delivering = false;
  std::vector<NotifyEvent> events;
};

void OnPollClosed(uv_handle_t* h) {
  auto* box = reinterpret_cast<PollBox*>(h);
  if (box->owner != nullptr) box->owner->closing = nullptr;
  napi_async_cleanup_hook_handle teardown = box->teardown;
  delete box;
  // Last: once told, the environment may finish ending and unload this library.
  if (teardown != nullptr) napi_remove_async_cleanup_hook(teardown);
}

// Stops everything the kernel and libuv hold for `n`. Safe to call twice, and
// from inside the callback (the batch loop checks `closed`).
void Shutdown(Notifier* n, bool from_js) {
  if (n->closed) return;
  n->closed = true;
  if (n->poll != nullptr) {
    PollBox* box = n->poll;
    n->poll = nullptr;
    uv_poll_stop(&box->poll);
    n->closing = box;
    uv_close(reinterpret_cast<uv_handle_t*>(&box->poll), OnPollClosed);
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
    if (n->async != nullptr) napi_async_destroy(n->env, n->async);
    n->async = nullptr;
    n->callback.Reset();
    n->self.Reset();
  }
}

// The environment is ending with the notifier still registered: stop it,
// and report the hook done only when the poll handle's close has completed.
void TeardownHook(napi_async_cleanup_hook_handle handle, void* arg) {
  auto* n = static_cast<Notifier*>(arg);
  n->hook = nullptr;  // handed over: removed below or by the close callback
  Shutdown(n, false);
  if (n->closing != nullptr) {
    n->closing->teardown = handle;
  } else {
    napi_remove_async_cleanup_hook(handle);
  }
}

void Finalize(Napi::Env /*env*/, Notifier* n) {
  if (n->hook != nullptr) {
    napi_remove_async_cleanup_hook(n->hook);
    n->hook = nullptr;
  }
  Shutdown(n, false);
  if (n->closing != nullptr) n->closing->owner = nullptr;
  delete n;
}

// Hands one batch to JS. Raw N-API with every status checked, never a
// throwing helper: during an environment's teardown libuv may still run this
// poll once, when JS can no longer be called, and then the batch is dropped
// quietly instead of aborting the process.
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

void OnPoll(uv_poll_t* handle, int status, int /*events*/) {
  auto* n = reinterpret_cast<PollBox*>(handle)->owner;
  if (n == nullptr || n->closed) return;
  if (status < 0) {
    Call(n, std::vector<NotifyEvent>{NotifyEvent{-2, static_cast<uint32_t>(-status), std::string()}});
    return;
  }
  Deliver(n);
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
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsNumber()) {
    ThrowArg(env, "ERR_INVALID_ARG_TYPE", "add(path, mask): a string and a number");
    return env.Undefined();
  }
  std::string path = info[0].As<Napi::String>().Utf8Value();
  if (path.empty() || path.size() >= PATH_MAX || strlen(path.c_str()) != path.size()) {
    ThrowArg(env, "ERR_INVALID_ARG_VALUE", "add(path, mask): path is empty, too long or contains a NUL byte");
    return env.Undefined();
  }
  double m = info[1].As<Napi::Number>().DoubleValue();
  if (!(m >= 0 && m <= 4294967295.0) || m != static_cast<double>(static_cast<uint32_t>(m))) {
    ThrowArg(env, "ERR_OUT_OF_RANGE", "add(path, mask): mask must be a 32-bit unsigned integer");
    return env.Undefined();
  }
  if (n->closed) return Napi::Number::New(env, -EBADF);
  int wd = -1;
  int err = NotifyAdd(n->state, path.c_str(), static_cast<uint32_t>(m), &wd);
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
  if (n->poll != nullptr) uv_ref(reinterpret_cast<uv_handle_t*>(&n->poll->poll));
  return info.Env().Undefined();
}

Napi::Value Unref(const Napi::CallbackInfo& info) {
  Notifier* n = Of(info);
  if (n->poll != nullptr) uv_unref(reinterpret_cast<uv_handle_t*>(&n->poll->poll));
  return info.Env().Undefined();
}

// Opens a notifier of either kind: `exits` picks process exits over changes.
Napi::Value OpenKind(const Napi::CallbackInfo& info, bool exits) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    ThrowArg(env, "ERR_INVALID_ARG_TYPE", exits ? "openExits(callback): a function" : "open(callback): a function");
    return env.Undefined();
  }
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) return Napi::Number::New(env, -ENOSYS);
  NotifyState* state = nullptr;
  ExitState* xstate = nullptr;
  int fd = -1;
  int err = exits ? ExitOpen(&xstate, &fd) : NotifyOpen(&state, &fd);
  if (err != 0) return Napi::Number::New(env, -err);
  auto* n = new Notifier();
  n->env = env;
  n->state = state;
  n->exits = xstate;
  n->poll = new PollBox();
  int r = uv_poll_init(loop, &n->poll->poll, fd);
  if (r != 0) {
    delete n->poll;
    n->poll = nullptr;
    if (state != nullptr) NotifyClose(state);
    if (xstate != nullptr) ExitClose(xstate);
    delete n;
    return Napi::Number::New(env, r);  // libuv errors are already -errno
  }
  n->poll->owner = n;
  Napi::Object obj = Napi::Object::New(env);
  obj.Set("add", exits ? Napi::Function::New(env, AddPid, "add", n) : Napi::Function::New(env, Add, "add", n));
  obj.Set("remove", Napi::Function::New(env, Remove, "remove", n));
  obj.Set("close", Napi::Function::New(env, Close, "close", n));
  obj.Set("ref", Napi::Function::New(env, Ref, "ref", n));
  obj.Set("unref", Napi::Function::New(env, Unref, "unref", n));
  obj.AddFinalizer(Finalize, n);
  if (napi_add_async_cleanup_hook(env, TeardownHook, n, &n->hook) != napi_ok) n->hook = nullptr;
  n->callback = Napi::Persistent(info[0].As<Napi::Function>());
  n->self = Napi::Persistent(obj);
  napi_async_init(env, obj, Napi::String::New(env, exits ? "runwarden:exits" : "runwarden:notify"), &n->async);
  r = uv_poll_start(&n->poll->poll, UV_READABLE, OnPoll);
  if (r != 0) {
    Shutdown(n, true);
    return Napi::Number::New(env, r);
  }
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
