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
#if defined(__APPLE__) && defined(__x86_64__)
#include <sys/sysctl.h>
#elif defined(__x86_64__) && !defined(__GLIBC__)
#include <cpuid.h>
#endif

namespace {

constexpr size_t kMaxNeedles = 8;
constexpr size_t kMaxNeedleLen = 64;

struct Needle {
  const uint8_t* bytes;
  size_t len;
};

inline bool MatchAt(const uint8_t* h, size_t hlen, size_t i, const Needle& n) {
  return i + n.len <= hlen && memcmp(h + i, n.bytes, n.len) == 0;
}

// The greatest i < end with some needle at h[i, i + len) inside h[0, hlen); -1 if none.
// W bytes per step: a candidate needs the needle's first, second and last byte in place.
template <size_t W>
inline __attribute__((always_inline)) int64_t LastMatchW(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen) {
  typedef int8_t vec __attribute__((vector_size(W)));
// Plain statements, not helper functions: a helper returning a 32-byte vector would not share the caller's AVX2 target.
#define RW_LOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define RW_SPLAT(v, c) memset(&(v), (c), sizeof(v))
  vec first[kMaxNeedles], second[kMaxNeedles], last[kMaxNeedles];
  for (size_t k = 0; k < count; k++) {
    RW_SPLAT(first[k], ns[k].bytes[0]);
    RW_SPLAT(second[k], ns[k].bytes[ns[k].len > 1 ? 1 : 0]);
    RW_SPLAT(last[k], ns[k].bytes[ns[k].len - 1]);
  }
  size_t i = end;
  // Positions whose loads (plus a needle's length) would run past the buffer: one by one.
  while (i > 0 && i + W + maxlen > hlen) {
    i--;
    for (size_t k = 0; k < count; k++) {
      if (MatchAt(h, hlen, i, ns[k])) return static_cast<int64_t>(i);
    }
  }
  while (i >= W) {
    const size_t b = i - W;
    vec f, s, l, acc;
    RW_LOAD(f, h + b);
    RW_LOAD(s, h + b + 1);
    RW_SPLAT(acc, 0);
    for (size_t k = 0; k < count; k++) {
      RW_LOAD(l, h + b + ns[k].len - 1);
      acc |= (f == first[k]) & (s == second[k]) & (l == last[k]);
    }
    uint64_t w[W / 8];
    memcpy(w, &acc, sizeof w);
    uint64_t any = 0;
    for (size_t q = 0; q < W / 8; q++) any |= w[q];
    if (any != 0) {
      for (size_t j = W; j-- > 0;) {
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
#undef RW_LOAD
#undef RW_SPLAT
}

int64_t LastMatch16(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen) {
  return LastMatchW<16>(h, hlen, end, ns, count, maxlen);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// 32 bytes a step where the CPU has AVX2 (checked once, at run time); same answers.
__attribute__((target("avx2"))) int64_t LastMatch32(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen) {
  return LastMatchW<32>(h, hlen, end, ns, count, maxlen);
}
// Whether the CPU has AVX2. On darwin not __builtin_cpu_supports: it reads
// compiler-rt's __cpu_model, which libSystem does not export (Apple's clang
// links it in statically; the zig-built prebuild would be left with an
// undefined symbol), so darwin asks the kernel's hw.optional.avx2_0 sysctl.
// Any doubt answers no: the 16-byte path gives the same answers.
bool CpuHasAvx2() {
#if defined(__APPLE__)
  int v = 0;
  size_t len = sizeof v;
  return sysctlbyname("hw.optional.avx2_0", &v, &len, nullptr, 0) == 0 && v == 1;
#elif defined(__GLIBC__)
  return __builtin_cpu_supports("avx2");
#else
  // Elsewhere (musl) the same: __cpu_model is libgcc's or compiler-rt's, and
  // a shared object built by zig cannot reach it. CPUID says whether the CPU
  // has AVX and AVX2, XGETBV whether the kernel saves the YMM registers.
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & bit_OSXSAVE) == 0 || (c & bit_AVX) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6) return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0 && (b & bit_AVX2) != 0;
#endif
}
int64_t LastMatch(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen) {
  static const bool avx2 = CpuHasAvx2();
  return avx2 ? LastMatch32(h, hlen, end, ns, count, maxlen) : LastMatch16(h, hlen, end, ns, count, maxlen);
}
#else
int64_t LastMatch(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen) {
  return LastMatch16(h, hlen, end, ns, count, maxlen);
}
#endif

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
    ns[count] = Needle{p + at + 1, len};
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
