// runwarden native, Windows: no change notifier. `open` and `openExits`
// answer -ENOSYS, and the TypeScript side polls open legs instead (every
// LIVE_POLL_MS, 100 ms: src/live/types.ts) and says so once. Directory change
// notices (ReadDirectoryChangesW) are not wired: a poll is what Wine shows
// as Windows does, and it is what this addon has been run under.
#include <napi.h>

#include <errno.h>

#include "../notify.h"

namespace rw {
namespace {

Napi::Value Unsupported(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), -ENOSYS); }

}  // namespace

Napi::Object NotifyExports(Napi::Env env) {
  Napi::Object mask = Napi::Object::New(env);
  mask.Freeze();
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", Napi::String::New(env, "unsupported"));
  o.Set("mask", mask);
  o.Set("open", Napi::Function::New(env, Unsupported, "open"));
  o.Set("exitBackend", Napi::String::New(env, "unsupported"));
  o.Set("openExits", Napi::Function::New(env, Unsupported, "openExits"));
  o.Freeze();
  return o;
}

}  // namespace rw
