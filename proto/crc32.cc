// CRC-32 by folding with carry-less multiplication.
//
// The method is Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
// Instruction" (Gopal et al., 2009), for the bit-reflected IEEE polynomial: four 128-bit
// accumulators fold 64 bytes per step, are folded into one, which is reduced to 64 and then
// 32 bits, and a Barrett reduction gives the remainder. The constants are x^k mod P(x) for
// the fold distances, bit-reflected, and P(x) and floor(x^64 / P(x)) for the reduction.
#include "proto/crc32.h"

#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace podrun {
namespace {

// zlib's crc32 takes the length as uInt: feed it in pieces below 4 GiB.
uint32_t ZlibCrc32(uint32_t crc, const unsigned char* p, size_t size) {
  uLong c = crc;
  while (size > 0) {
    const size_t n = size < (1u << 30) ? size : (1u << 30);
    c = crc32(c, p, static_cast<uInt>(n));
    p += n;
    size -= n;
  }
  return static_cast<uint32_t>(c);
}

#if defined(__x86_64__)
constexpr size_t kMinFoldBytes = 64;
#define PODRUN_CLMUL __attribute__((target("pclmul,sse4.1")))

PODRUN_CLMUL inline __m128i Load(const unsigned char* at) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
}

// Folds `acc` forward by the distance of `k` and adds `next`.
PODRUN_CLMUL inline __m128i Fold(__m128i acc, __m128i k, __m128i next) {
  const __m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

// The CRC register (not inverted: zlib's value is ~ of it before and after) after `size`
// bytes, a multiple of 16 and at least 64.
PODRUN_CLMUL uint32_t FoldCrc32(uint32_t crc, const unsigned char* p, size_t size) {
  const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);  // x^(512±32) mod P
  const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);  // x^(128±32) mod P
  const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);              // x^64 mod P
  const __m128i poly_mu = _mm_set_epi64x(0x1f7011641, 0x1db710641);
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);

  __m128i x1 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x2 = Load(p + 16);
  __m128i x3 = Load(p + 32);
  __m128i x4 = Load(p + 48);
  p += 64;
  size -= 64;
  while (size >= 64) {
    x1 = Fold(x1, k1k2, Load(p));
    x2 = Fold(x2, k1k2, Load(p + 16));
    x3 = Fold(x3, k1k2, Load(p + 32));
    x4 = Fold(x4, k1k2, Load(p + 48));
    p += 64;
    size -= 64;
  }
  x1 = Fold(x1, k3k4, x2);
  x1 = Fold(x1, k3k4, x3);
  x1 = Fold(x1, k3k4, x4);
  while (size >= 16) {
    x1 = Fold(x1, k3k4, Load(p));
    p += 16;
    size -= 16;
  }
  // 128 -> 64 bits (this also appends the 32 zero bits the remainder needs).
  __m128i t = _mm_clmulepi64_si128(k3k4, x1, 0x01);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
  // 64 -> 32 bits.
  t = _mm_srli_si128(x1, 4);
  x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00);
  x1 = _mm_xor_si128(x1, t);
  // Barrett reduction to the remainder.
  t = x1;
  x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly_mu, 0x10);
  x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly_mu, 0x00);
  x1 = _mm_xor_si128(x1, t);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

bool HasClmul() {
  static const bool has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return has;
}
#endif

}  // namespace

uint32_t Crc32Portable(uint32_t crc, const void* data, size_t size) {
  return ZlibCrc32(crc, static_cast<const unsigned char*>(data), size);
}

uint32_t Crc32(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (size >= kMinFoldBytes && HasClmul()) {
    const size_t folded = size & ~size_t{15};
    const uint32_t reg = FoldCrc32(~crc, p, folded);
    return ZlibCrc32(~reg, p + folded, size - folded);
  }
#endif
  return ZlibCrc32(crc, p, size);
}

}  // namespace podrun
