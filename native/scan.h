// runwarden native seam: a backward byte search over a buffer (scan.cc).
#pragma once
#include <napi.h>

namespace rw {
// Adds `lastMatch` to the addon's exports.
void RegisterScan(Napi::Env env, Napi::Object exports);
}  // namespace rw
