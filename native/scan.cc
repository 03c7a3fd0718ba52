// runwarden native seam: the last place in a buffer where any of a few short
// byte strings begins. A mechanism, not a policy: which strings, and what a
// match means, are decided in TypeScript (src/read/tail.ts).
//
// Why native: the tail reader searches a long last leg for the few lines that
// can be leg events. Node's Buffer.lastIndexOf takes one pattern per pass and,
// on ordinary text, runs at a few GB/s at best; this does all patterns in one
// pass, 16 bytes at a time, by comparing each pattern's first, second and last
// byte at every position (a match of all three is then checked byte by byte). Written
// with GCC/Clang vector extensions, so the same source compiles to SSE2 on
// x86-64 and NEON on arm64; no platform code.

#include "scan.h"

#include <stdint.h>
#include <string.h>

namespace {

typedef int8_t v16 __attribute__((vector_size(16)));

constexpr size_t kMaxNeedles = 8;
constexpr size_t kMaxNeedleLen = 64;

struct Needle {
  const uint8_t* bytes;
  size_t len;
  v16 first;
  v16 second;
  v16 last;
};

inline v16 Load(const uint8_t* p) {
  v16 v;
  memcpy(&v, p, sizeof v);
  return v;
}

inline v16 Splat(uint8_t c) {
  v16 v;
  memset(&v, c, sizeof v);
  return v;
}

inline bool Any(v16 v) {
  uint64_t w[2];
  memcpy(w, &v, sizeof w);
  return (w[0] | w[1]) != 0;
}

inline bool MatchAt(const uint8_t* h, size_t hlen, size_t i, const Needle& n) {
  return i + n.len <= hlen && memcmp(h + i, n.bytes, n.len) == 0;
}

// The greatest i < end with some needle at h[i, i + len) inside h[0, hlen); -1 if none.
int64_t LastMatch(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen) {
  size_t i = end;
  // Positions whose 16-byte loads (plus a needle's length) would run past the buffer: one by one.
  while (i > 0 && i + 16 + maxlen > hlen) {
    i--;
    for (size_t k = 0; k < count; k++) {
      if (MatchAt(h, hlen, i, ns[k])) return static_cast<int64_t>(i);
    }
  }
  while (i >= 16) {
    const size_t b = i - 16;
    const v16 f = Load(h + b);
    v16 acc = Splat(0);
    for (size_t k = 0; k < count; k++) {
      const Needle& n = ns[k];
      acc |= (f == n.first) & (Load(h + b + 1) == n.second) & (Load(h + b + n.len - 1) == n.last);
    }
    if (Any(acc)) {
      for (size_t j = 16; j-- > 0;) {
        for (size_t k = 0; k < count; k++) {
          if (MatchAt(h, hlen, b + j, ns[k])) return static_cast<int64_t>(b + j);
        }
      }
    }
    i = b;
  }
  while (i > 0) {
    i--;
    for (size_t k = 0; k < count; k++) {
      if (MatchAt(h, hlen, i, ns[k])) return static_cast<int64_t>(i);
    }
  }
  return -1;
}

// lastMatch(haystack, end, needles): the greatest index below `end` at which
// one of `needles` begins in `haystack`, or -1. `needles` packs the patterns as
// [length byte][bytes]... (1 to 8 patterns of 1 to 64 bytes).
Napi::Value LastMatchJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 3 || !info[0].IsTypedArray() || !info[1].IsNumber() || !info[2].IsTypedArray()) {
    Napi::TypeError e = Napi::TypeError::New(env, "lastMatch(haystack: Uint8Array, end: number, needles: Uint8Array)");
    e.Set("code", Napi::String::New(env, "ERR_INVALID_ARG_TYPE"));
    e.ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Uint8Array hay = info[0].As<Napi::Uint8Array>();
  Napi::Uint8Array packed = info[2].As<Napi::Uint8Array>();
  const double endArg = info[1].As<Napi::Number>().DoubleValue();
  const size_t hlen = hay.ByteLength();
  if (hay.TypedArrayType() != napi_uint8_array || packed.TypedArrayType() != napi_uint8_array || !(endArg >= 0) ||
      endArg > static_cast<double>(hlen) || endArg != static_cast<double>(static_cast<size_t>(endArg))) {
    Napi::RangeError e = Napi::RangeError::New(env, "lastMatch: end must be an integer within the haystack, arrays Uint8Array");
    e.Set("code", Napi::String::New(env, "ERR_OUT_OF_RANGE"));
    e.ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Needle ns[kMaxNeedles];
  size_t count = 0, maxlen = 1;
  const uint8_t* p = packed.Data();
  const size_t plen = packed.ByteLength();
  for (size_t at = 0; at < plen;) {
    const size_t len = p[at];
    if (count == kMaxNeedles || len == 0 || len > kMaxNeedleLen || at + 1 + len > plen) {
      Napi::RangeError e = Napi::RangeError::New(env, "lastMatch: bad needle list");
      e.Set("code", Napi::String::New(env, "ERR_OUT_OF_RANGE"));
      e.ThrowAsJavaScriptException();
      return env.Undefined();
    }
    ns[count] = Needle{p + at + 1, len, Splat(p[at + 1]), Splat(p[at + (len > 1 ? 2 : 1)]), Splat(p[at + len])};
    if (len > maxlen) maxlen = len;
    count++;
    at += 1 + len;
  }
  if (count == 0) return Napi::Number::New(env, -1);
  const int64_t r = LastMatch(hay.Data(), hlen, static_cast<size_t>(endArg), ns, count, maxlen);
  return Napi::Number::New(env, static_cast<double>(r));
}

}  // namespace

namespace rw {
void RegisterScan(Napi::Env env, Napi::Object exports) {
  exports.Set("lastMatch", Napi::Function::New(env, LastMatchJs, "lastMatch"));
}
}  // namespace rw
