// runwarden native seam: the last place in a buffer where any of a few short
// byte strings begins. A mechanism, not a policy: which strings, and what a
// match means, are decided in TypeScript (src/read/tail.ts).
//
// Why native: the tail reader searches a long last leg for the few lines that
// can be leg events (CONTRACT §2.5 rule 8), and that search is most of what an
// open leg costs beyond reading its bytes. Node's Buffer.lastIndexOf takes one
// pattern per pass and, on ordinary text, runs at a few GB/s at best; this
// does all patterns in one pass. Three ways, the same answers:
//  - where the CPU has AVX-512 VBMI (x86-64 linux, checked once at run time):
//    64 bytes a step, each of a needle's first three bytes looked up in a
//    128-entry table of which needles have that byte there (one vpermi2b per
//    position), four steps per branch; where those propose a position, its
//    fifth byte is looked up too, so needles that share their first three
//    bytes (`\u005`, `\u006`, `\u007`) are told apart before any is compared;
//  - where it has AVX2 (x86-64, checked once at run time): the same lookups
//    by the byte's two halves in 16-entry tables (vpshufb), 32 bytes a step;
//  - elsewhere, 16 bytes a step, by comparing each pattern's first, second
//    and last byte at every position, written with GCC/Clang vector
//    extensions, so the same source compiles to SSE2 on x86-64 and NEON on
//    arm64.
// Either filter only proposes positions; a match is then checked byte by byte.
// lastMatch takes the widest path the CPU has; a caller may name a narrower one
// (searchPaths() lists them), so a test runs every path this CPU has on the
// same cases.

#include "scan.h"

#include <stdint.h>
#include <string.h>

#include <string>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#if !defined(__APPLE__)
#define RW_VBMI 1
#endif
#endif
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
// W bytes per step: a candidate needs the needle's first, second and last byte in place
// (a one-byte needle has no second: with kShort, any byte there will do).
template <size_t W, bool kShort>
inline __attribute__((always_inline)) int64_t LastMatchW(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen) {
  typedef int8_t vec __attribute__((vector_size(W)));
// Plain statements, not helper functions: a helper returning a 32-byte vector would not share the caller's AVX2 target.
#define RW_LOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define RW_SPLAT(v, c) memset(&(v), (c), sizeof(v))
  vec first[kMaxNeedles], second[kMaxNeedles], last[kMaxNeedles], anySecond[kMaxNeedles];
  for (size_t k = 0; k < count; k++) {
    RW_SPLAT(first[k], ns[k].bytes[0]);
    RW_SPLAT(second[k], ns[k].bytes[ns[k].len > 1 ? 1 : 0]);
    RW_SPLAT(last[k], ns[k].bytes[ns[k].len - 1]);
    RW_SPLAT(anySecond[k], ns[k].len > 1 ? 0 : 0xff);
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
      if (kShort) {
        acc |= (f == first[k]) & ((s == second[k]) | anySecond[k]) & (l == last[k]);
      } else {
        acc |= (f == first[k]) & (s == second[k]) & (l == last[k]);
      }
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

#if defined(RW_VBMI)
#define RW_VBMI_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi")))

// The bits of the 64 bytes from address q that lie in [from, to).
inline uint64_t Within(uintptr_t q, uintptr_t from, uintptr_t to) {
  if (to <= q || from >= q + 64) return 0;
  const size_t lo = from > q ? from - q : 0, hi = to < q + 64 ? to - q : 64;
  return (hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1) & (~uint64_t{0} << lo);
}

// The 64 bytes from address q, those outside [from, to) read as zero. A masked
// load does not read the bytes its mask leaves out, and a fault on one of them
// is suppressed (Intel SDM, VMOVDQU8), so no byte outside the haystack is
// touched, whatever the alignment of its ends.
RW_VBMI_TARGET inline __m512i LoadWithin(uintptr_t q, uintptr_t from, uintptr_t to) {
  return _mm512_maskz_loadu_epi8(Within(q, from, to), reinterpret_cast<const void*>(q));
}

// The greatest i < end at which some needle starts, 64 positions a step. For
// each of the first three bytes of a needle, a table by the byte's low seven
// bits holds which needles have that byte there (a needle shorter than three
// bytes has any byte past its end); the AND of the three lookups is non-zero
// wherever a needle's first three bytes can be. Only in a step where that
// proposes a position is the fifth byte looked up as well (a fourth table;
// any byte for a needle of four bytes or fewer): text full of `\u00e9` or
// `\u001b` then costs a lookup, not a comparison per escape. A byte of 128
// or more shares its entry with one below 128, so the tables only ever
// propose too much; MatchAt decides.
//
// The steps are the 64-byte-aligned blocks of memory, each loaded once: the
// bytes one, two and four places on are shuffled out of a block and the one above
// it (vpermt2b), not loaded again from an address that straddles two cache
// lines. A window read a moment ago by pread is mostly out of the first-level
// cache, and there straddling loads cost more than the lookups do. The blocks
// at either end of the haystack are loaded masked, so no byte outside it is read.
RW_VBMI_TARGET int64_t LastMatchVbmi(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count) {
  constexpr size_t kAt[4] = {0, 1, 2, 4};  // the byte of a needle each table is for
  if (end == 0) return -1;
  alignas(64) uint8_t table[4][128];
  memset(table, 0, sizeof table);
  for (size_t k = 0; k < count; k++) {
    const uint8_t bit = static_cast<uint8_t>(1u << k);
    for (size_t p = 0; p < 4; p++) {
      if (kAt[p] < ns[k].len) {
        table[p][ns[k].bytes[kAt[p]] & 0x7f] |= bit;
      } else {
        for (size_t c = 0; c < 128; c++) table[p][c] |= bit;  // a needle this short has any byte there
      }
    }
  }
  alignas(64) uint8_t shift[3][64];  // vpermt2b indices: byte j + 1 (j + 2, j + 4) of a block and the one above it
  for (size_t j = 0; j < 64; j++) {
    shift[0][j] = static_cast<uint8_t>(j + 1);
    shift[1][j] = static_cast<uint8_t>(j + 2);
    shift[2][j] = static_cast<uint8_t>(j + 4);
  }
  const __m512i lo0 = _mm512_load_si512(table[0]), hi0 = _mm512_load_si512(table[0] + 64);
  const __m512i lo1 = _mm512_load_si512(table[1]), hi1 = _mm512_load_si512(table[1] + 64);
  const __m512i lo2 = _mm512_load_si512(table[2]), hi2 = _mm512_load_si512(table[2] + 64);
  const __m512i lo3 = _mm512_load_si512(table[3]), hi3 = _mm512_load_si512(table[3] + 64);
  const __m512i by1 = _mm512_load_si512(shift[0]), by2 = _mm512_load_si512(shift[1]), by4 = _mm512_load_si512(shift[2]);
  const uintptr_t base = reinterpret_cast<uintptr_t>(h), stop = base + hlen, asked = base + end;
  // Per byte of a block `cur` (the block above it: `next`), the needles whose first three bytes can start there.
  // Macros, not lambdas: a lambda would not share this function's target.
#define RW_THREE(cur, next)                                                                                           \
  _mm512_and_si512(_mm512_and_si512(_mm512_permutex2var_epi8(lo0, (cur), hi0),                                         \
                                    _mm512_permutex2var_epi8(lo1, _mm512_permutex2var_epi8((cur), by1, (next)), hi1)), \
                   _mm512_permutex2var_epi8(lo2, _mm512_permutex2var_epi8((cur), by2, (next)), hi2))
#define RW_MASK(v) static_cast<uint64_t>(_mm512_test_epi8_mask((v), _mm512_set1_epi8(-1)))
  // Of the positions `m` proposes in a block, those where the same needle can have its fifth byte too.
#define RW_FIFTH(cur, next, m) \
  ((m) == 0 ? uint64_t{0}      \
            : (m) & RW_MASK(_mm512_and_si512(RW_THREE(cur, next), _mm512_permutex2var_epi8(lo3, _mm512_permutex2var_epi8((cur), by4, (next)), hi3))))
  // The greatest proposed position in the block at q that is a match, or -1.
  auto check = [&](uintptr_t q, uint64_t bits) -> int64_t {
    while (bits != 0) {
      const size_t j = 63 - static_cast<size_t>(__builtin_clzll(bits));
      const size_t at = q + j - base;
      for (size_t k = 0; k < count; k++) {
        if (MatchAt(h, hlen, at, ns[k])) return static_cast<int64_t>(at);
      }
      bits &= ~(uint64_t{1} << j);
    }
    return -1;
  };
  // The block holding the last position asked about; positions from `asked` on are left out.
  uintptr_t q = (asked - 1) & ~uintptr_t{63};
  __m512i next = LoadWithin(q + 64, base, stop);
  __m512i cur = LoadWithin(q, base, stop);
  int64_t r = check(q, RW_FIFTH(cur, next, RW_MASK(RW_THREE(cur, next)) & Within(q, base, asked)));
  if (r >= 0) return r;
  next = cur;
  // Whole blocks below it, four a branch.
  while (q >= base + 256) {
    const uintptr_t b = q - 256;
    const __m512i v3 = _mm512_load_si512(reinterpret_cast<const void*>(b + 192)), v2 = _mm512_load_si512(reinterpret_cast<const void*>(b + 128));
    const __m512i v1 = _mm512_load_si512(reinterpret_cast<const void*>(b + 64)), v0 = _mm512_load_si512(reinterpret_cast<const void*>(b));
    const uint64_t m3 = RW_MASK(RW_THREE(v3, next)), m2 = RW_MASK(RW_THREE(v2, v3)), m1 = RW_MASK(RW_THREE(v1, v2)), m0 = RW_MASK(RW_THREE(v0, v1));
    if (__builtin_expect((m0 | m1 | m2 | m3) != 0, 0)) {
      r = check(b + 192, RW_FIFTH(v3, next, m3));
      if (r < 0) r = check(b + 128, RW_FIFTH(v2, v3, m2));
      if (r < 0) r = check(b + 64, RW_FIFTH(v1, v2, m1));
      if (r < 0) r = check(b, RW_FIFTH(v0, v1, m0));
      if (r >= 0) return r;
    }
    next = v0;
    q = b;
  }
  // The rest: whole blocks, then the one holding h[0] when h is not aligned.
  while (q > base) {
    const uintptr_t b = q - 64;
    cur = b >= base ? _mm512_load_si512(reinterpret_cast<const void*>(b)) : LoadWithin(b, base, stop);
    r = check(b, RW_FIFTH(cur, next, RW_MASK(RW_THREE(cur, next)) & Within(b, base, asked)));
    if (r >= 0) return r;
    next = cur;
    q = b;
  }
  return -1;
#undef RW_FIFTH
#undef RW_MASK
#undef RW_THREE
}
#endif

int64_t LastMatch16(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen, bool hasShort) {
  return hasShort ? LastMatchW<16, true>(h, hlen, end, ns, count, maxlen) : LastMatchW<16, false>(h, hlen, end, ns, count, maxlen);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// Where the CPU has AVX2 (checked once, at run time): the VBMI search's
// filter with 16-entry tables, 64 positions a branch. A byte is looked up by
// its low and its high four bits (vpshufb, one table per half, a bit per
// needle in each) and the two answers ANDed: each needle has one byte at each
// place, so that is its byte exactly. The first three bytes of every needle
// are looked up at each position, the fifth only where those propose one;
// MatchAt decides. Fewer instructions than comparing each needle's bytes
// (six needles, three bytes each) at every position.
__attribute__((target("avx2"))) int64_t LastMatch32(const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count) {
  constexpr size_t kAt[4] = {0, 1, 2, 4};  // the byte of a needle each pair of tables is for
  constexpr size_t kLook = 4;              // a step at b loads up to h[b + 64 + kLook)
  alignas(32) uint8_t low[4][32], high[4][32];  // 16 entries, twice: vpshufb looks up within each 16-byte lane
  memset(low, 0, sizeof low);
  memset(high, 0, sizeof high);
  for (size_t k = 0; k < count; k++) {
    const uint8_t bit = static_cast<uint8_t>(1u << k);
    for (size_t p = 0; p < 4; p++) {
      for (size_t lane = 0; lane < 32; lane += 16) {
        if (kAt[p] < ns[k].len) {
          low[p][lane + (ns[k].bytes[kAt[p]] & 15)] |= bit;
          high[p][lane + (ns[k].bytes[kAt[p]] >> 4)] |= bit;
        } else {
          for (size_t c = 0; c < 16; c++) {  // a needle this short has any byte there
            low[p][lane + c] |= bit;
            high[p][lane + c] |= bit;
          }
        }
      }
    }
  }
  __m256i lo[4], hi[4];
  for (size_t p = 0; p < 4; p++) {
    lo[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(low[p]));
    hi[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(high[p]));
  }
  const __m256i nibble = _mm256_set1_epi8(15), zero = _mm256_setzero_si256();
  // Macros, not lambdas: a lambda would not share this function's target.
#define RW_AT(p, q) \
  (_mm256_and_si256(_mm256_shuffle_epi8(lo[p], _mm256_and_si256((q), nibble)), _mm256_shuffle_epi8(hi[p], _mm256_and_si256(_mm256_srli_epi16((q), 4), nibble))))
#define RW_LOAD32(at) _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + (at)))
#define RW_THREE32(b) _mm256_and_si256(_mm256_and_si256(RW_AT(0, RW_LOAD32(b)), RW_AT(1, RW_LOAD32((b) + 1))), RW_AT(2, RW_LOAD32((b) + 2)))
#define RW_BITS32(v) static_cast<uint32_t>(~_mm256_movemask_epi8(_mm256_cmpeq_epi8((v), zero)))
  auto scalar = [&](size_t at) {
    for (size_t k = 0; k < count; k++) {
      if (MatchAt(h, hlen, at, ns[k])) return true;
    }
    return false;
  };
  size_t i = end;
  while (i > 0 && i + kLook > hlen) {
    i--;
    if (scalar(i)) return static_cast<int64_t>(i);
  }
  while (i >= 64) {
    const size_t b = i - 64;
    const __m256i a1 = RW_THREE32(b + 32), a0 = RW_THREE32(b);
    const __m256i any = _mm256_or_si256(a0, a1);
    if (__builtin_expect(!_mm256_testz_si256(any, any), 0)) {
      const uint64_t fifth1 = RW_BITS32(_mm256_and_si256(a1, RW_AT(3, RW_LOAD32(b + 32 + 4))));
      const uint64_t fifth0 = RW_BITS32(_mm256_and_si256(a0, RW_AT(3, RW_LOAD32(b + 4))));
      for (uint64_t bits = fifth1 << 32 | fifth0; bits != 0;) {
        const size_t j = 63 - static_cast<size_t>(__builtin_clzll(bits));
        if (scalar(b + j)) return static_cast<int64_t>(b + j);
        bits &= ~(uint64_t{1} << j);
      }
    }
    i = b;
  }
  while (i > 0) {
    i--;
    if (scalar(i)) return static_cast<int64_t>(i);
  }
  return -1;
#undef RW_BITS32
#undef RW_THREE32
#undef RW_LOAD32
#undef RW_AT
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
#if defined(RW_VBMI)
// Whether the CPU has AVX-512 F, BW and VBMI and the kernel saves the opmask
// and ZMM registers. On glibc __builtin_cpu_supports checks both; elsewhere
// (musl, where a zig-built object cannot reach __cpu_model) CPUID and XGETBV.
// Any doubt answers no: the other paths give the same answers.
bool CpuHasVbmi() {
#if defined(__GLIBC__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
#else
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & bit_OSXSAVE) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0xe6) != 0xe6) return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0 && (b & bit_AVX512F) != 0 && (b & bit_AVX512BW) != 0 && (c & bit_AVX512VBMI) != 0;
#endif
}
#endif
#endif

// The search paths, widest first. Which of them this process can take is
// decided once, from the CPU; the widest is the one lastMatch takes unless a
// caller names another (a test that runs every path on the same cases).
enum class Path { kVbmi, kAvx2, k16 };

// The 16-byte path's name: what the vector extensions compile to here.
#if defined(__x86_64__)
constexpr const char* kName16 = "sse2";
#elif defined(__aarch64__)
constexpr const char* kName16 = "neon";
#else
constexpr const char* kName16 = "vector16";
#endif

const char* PathName(Path p) {
  switch (p) {
    case Path::kVbmi:
      return "avx512vbmi";
    case Path::kAvx2:
      return "avx2";
    case Path::k16:
      break;
  }
  return kName16;
}

// The paths this process can take, widest first, and how many.
struct Paths {
  Path list[3];
  size_t count;
};

Paths Available() {
  Paths out{{Path::k16, Path::k16, Path::k16}, 0};
#if defined(RW_VBMI)
  if (CpuHasVbmi()) out.list[out.count++] = Path::kVbmi;
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (CpuHasAvx2()) out.list[out.count++] = Path::kAvx2;
#endif
  out.list[out.count++] = Path::k16;
  return out;
}

const Paths& AvailablePaths() {
  static const Paths paths = Available();
  return paths;
}

int64_t LastMatchOn(Path p, const uint8_t* h, size_t hlen, size_t end, const Needle* ns, size_t count, size_t maxlen, bool hasShort) {
  switch (p) {
#if defined(RW_VBMI)
    case Path::kVbmi:
      return LastMatchVbmi(h, hlen, end, ns, count);
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    case Path::kAvx2:
      return LastMatch32(h, hlen, end, ns, count);
#endif
    default:
      return LastMatch16(h, hlen, end, ns, count, maxlen, hasShort);
  }
}

// lastMatch(haystack, end, needles): the greatest index below `end` at which
// one of `needles` begins in `haystack`, or -1. `needles` packs the patterns as
// [length byte][bytes]... (1 to 8 patterns of 1 to 64 bytes).
Napi::Value LastMatchJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || info.Length() > 4 || !info[0].IsTypedArray() || !info[1].IsNumber() || !info[2].IsTypedArray() ||
      (info.Length() == 4 && !info[3].IsString())) {
    Napi::TypeError e = Napi::TypeError::New(env, "lastMatch(haystack: Uint8Array, end: number, needles: Uint8Array, path?: string)");
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
  bool hasShort = false;
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
    if (len == 1) hasShort = true;
    count++;
    at += 1 + len;
  }
  const Paths& paths = AvailablePaths();
  Path path = paths.list[0];
  if (info.Length() == 4) {
    const std::string name = info[3].As<Napi::String>().Utf8Value();
    size_t k = 0;
    while (k < paths.count && name != PathName(paths.list[k])) k++;
    if (k == paths.count) {
      Napi::RangeError e = Napi::RangeError::New(env, "lastMatch: no search path \"" + name + "\" in this process (searchPaths() lists them)");
      e.Set("code", Napi::String::New(env, "ERR_OUT_OF_RANGE"));
      e.ThrowAsJavaScriptException();
      return env.Undefined();
    }
    path = paths.list[k];
  }
  if (count == 0) return Napi::Number::New(env, -1);
  const int64_t r = LastMatchOn(path, hay.Data(), hlen, static_cast<size_t>(endArg), ns, count, maxlen, hasShort);
  return Napi::Number::New(env, static_cast<double>(r));
}

// searchPaths(): the names of the search paths this process can take, widest
// first; the first is the one lastMatch takes when none is named.
Napi::Value SearchPathsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Paths& paths = AvailablePaths();
  Napi::Array out = Napi::Array::New(env, paths.count);
  for (size_t k = 0; k < paths.count; k++) out.Set(static_cast<uint32_t>(k), Napi::String::New(env, PathName(paths.list[k])));
  return out;
}

}  // namespace

namespace rw {
void RegisterScan(Napi::Env env, Napi::Object exports) {
  exports.Set("lastMatch", Napi::Function::New(env, LastMatchJs, "lastMatch"));
  exports.Set("searchPaths", Napi::Function::New(env, SearchPathsJs, "searchPaths"));
}
}  // namespace rw
