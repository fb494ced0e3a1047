// QSGD (Alistarh et al. 2017): unbiased stochastic rounding of |x|/||x||_2 to
// s levels, packed as sign + level in qsgd_bits(s) bits.
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MURMUR_QSGD_AVX2 1
#endif

#include "kernels/compress.h"
#include "kernels/cpu/pack.h"
#include "kernels/rng.h"

namespace murmur::kernels::cpu {
namespace {

template <unsigned B>
MURMUR_VECTOR_CLONES void encode_blocks(const float* in, std::size_t start, std::size_t n, unsigned s,
                                        float inv_norm_s, std::uint32_t key, std::uint8_t* packed) {
  // start is a multiple of 8 (whole bytes, an even pair index).
  alignas(64) std::uint8_t codes[detail::kBlock];
  std::uint8_t* const end = packed + packed_bytes(n, B);
  for (std::size_t base = start; base < n; base += detail::kBlock) {
    const std::size_t count = n - base < detail::kBlock ? n - base : detail::kBlock;
    const float* x = in + base;
    // Pairs share one hash (draw_unit16); base is even, count is even but
    // for the last block, whose odd tail takes the scalar path.
    const std::uint32_t pair0 = static_cast<std::uint32_t>(base / 2);
    auto code = [&](std::size_t j, float u) {
      const std::uint32_t w = std::bit_cast<std::uint32_t>(x[j]);
      const float r = std::bit_cast<float>(w & 0x7fffffffu) * inv_norm_s;  // in [0, s]
      // floor(r + u) as r + u >= 0; the min guards rounding at r == s.
      std::int32_t level = static_cast<std::int32_t>(r + u);
      level = level > std::int32_t(s) ? std::int32_t(s) : level;
      return static_cast<std::uint8_t>(std::uint32_t(level) | ((w >> 31) << (B - 1)));
    };
    const std::size_t pairs = count / 2;
    for (std::size_t q = 0; q < pairs; ++q) {
      const std::uint32_t h = draw_u32(key, pair0 + static_cast<std::uint32_t>(q));
      codes[2 * q] = code(2 * q, static_cast<float>(h & 0xffffu) * (1.0f / 65536.0f));
      codes[2 * q + 1] = code(2 * q + 1, static_cast<float>(h >> 16) * (1.0f / 65536.0f));
    }
    if (count % 2) codes[count - 1] = code(count - 1, draw_unit16(key, static_cast<std::uint32_t>(base + count - 1)));
    detail::pack_codes<B>(codes, count, packed + packed_bytes(base, B), end);
  }
}

template <unsigned B>
MURMUR_VECTOR_CLONES bool decode_blocks(const std::uint8_t* packed, std::size_t start, std::size_t n, unsigned s,
                                        float step, float* out) {
  // start is a multiple of 8 (whole bytes).
  alignas(64) std::uint8_t codes[detail::kBlock];
  constexpr std::uint8_t level_mask = (1u << (B - 1)) - 1;
  const std::uint8_t* end = packed + packed_bytes(n, B);
  std::uint8_t max_level = 0;
  for (std::size_t base = start; base < n; base += detail::kBlock) {
    const std::size_t count = n - base < detail::kBlock ? n - base : detail::kBlock;
    detail::unpack_codes<B>(packed + packed_bytes(base, B), end, count, codes);
    float* y = out + base;
    for (std::size_t j = 0; j < count; ++j) {
      const std::uint8_t level = codes[j] & level_mask;
      max_level = level > max_level ? level : max_level;
      const std::uint32_t sign = std::uint32_t(codes[j] >> (B - 1)) << 31;
      y[j] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(float(level) * step) | sign);
    }
  }
  return max_level <= s;
}

#if MURMUR_QSGD_AVX2
// AVX2 (+FMA) bodies, bit-identical to the blocks above, which finish their
// tails: hashes in 8 lanes (counter * golden advanced by an add), codes
// built in bytes and packed in registers, no per-element branch. Chosen at
// run time (__builtin_cpu_supports), as target_clones would.
#define MURMUR_AVX2 __attribute__((target("avx2,fma")))

// murmur3's finaliser (rng.h mix32) in 8 lanes.
MURMUR_AVX2 inline __m256i mix32x8(__m256i h) {
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
  h = _mm256_mullo_epi32(h, _mm256_set1_epi32(static_cast<int>(0x85ebca6bu)));
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
  h = _mm256_mullo_epi32(h, _mm256_set1_epi32(static_cast<int>(0xc2b2ae35u)));
  return _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
}

// (int)(|x| * inv_norm_s + u) for 8 elements, u = u16 * 2^-16. The product
// u16 * 2^-16 is exact, so the FMA rounds once, as the scalar add does.
MURMUR_AVX2 inline __m256i trunc8(__m256 x, __m256i u16, __m256 inv_norm_s) {
  const __m256 r = _mm256_mul_ps(_mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))), inv_norm_s);
  return _mm256_cvttps_epi32(_mm256_fmadd_ps(_mm256_cvtepi32_ps(u16), _mm256_set1_ps(1.0f / 65536.0f), r));
}

// Elements [0, returned) are encoded; returns a multiple of 32. A step
// quantises 32 elements (16 hashes), builds their 32 codes in bytes, and
// packs them in registers into 4B bytes.
template <unsigned B>
MURMUR_AVX2 std::size_t encode_avx2(const float* in, std::size_t n, unsigned s, float inv_norm_s,
                                    std::uint32_t key, std::uint8_t* packed) {
  constexpr std::uint32_t golden = 0x9e3779b9u;
  const std::size_t bytes = packed_bytes(n, B);
  // B = 8 stores 32 bytes; else two 16-byte stores at offsets 0 and 2B
  // (the second overwrites the zeros the first leaves past 2B).
  constexpr std::size_t kReach = B == 8 ? 32 : 2 * B + 16;
  const __m256i vkey = _mm256_set1_epi32(static_cast<int>(key));
  const __m256i vstep = _mm256_set1_epi32(static_cast<int>(8 * golden));
  const __m256 vinv = _mm256_set1_ps(inv_norm_s);
  const __m256i vs = _mm256_set1_epi8(static_cast<char>(s));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  // Byte k of the 16 of each 128-bit lane after the pshufb: B = even, 4
  // codes (B/2 bytes) per 32-bit lane; odd, 8 codes (B bytes) per 64-bit.
  alignas(32) std::int8_t compact[32];
  for (unsigned o = 0; o < 32; ++o) {
    const unsigned k = o % 16;
    const unsigned src = B % 2 == 0 ? 4 * (k / (B / 2)) + k % (B / 2) : 8 * (k / B) + k % B;
    compact[o] = k < 2 * B ? static_cast<std::int8_t>(src) : std::int8_t(-128);
  }
  const __m256i vcompact = _mm256_load_si256(reinterpret_cast<const __m256i*>(compact));
  // counter * golden of pairs 0, 1, 4, 5, 2, 3, 6, 7 (pair p: elements 2p
  // and 2p + 1, low half of the hash first), so that the in-lane 16-bit
  // unpacks give the uniforms of elements 0-7 and 8-15 in order.
  __m256i ctr = _mm256_setr_epi32(0, int(1 * golden), int(4 * golden), int(5 * golden), int(2 * golden),
                                  int(3 * golden), int(6 * golden), int(7 * golden));
  std::size_t steps = n / 32;
  if (bytes < kReach) steps = 0;
  else if (steps > (bytes - kReach) / (4 * B) + 1) steps = (bytes - kReach) / (4 * B) + 1;
  const float* x = in;
  std::uint8_t* out = packed;
  const __m256i zero = _mm256_setzero_si256();
  for (std::size_t step = 0; step < steps; ++step, x += 32, out += 4 * B) {
    const __m256i h0 = mix32x8(_mm256_xor_si256(ctr, vkey));
    ctr = _mm256_add_epi32(ctr, vstep);
    const __m256i h1 = mix32x8(_mm256_xor_si256(ctr, vkey));
    ctr = _mm256_add_epi32(ctr, vstep);
    const __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8);
    const __m256 x2 = _mm256_loadu_ps(x + 16), x3 = _mm256_loadu_ps(x + 24);
    const __m256i t0 = trunc8(x0, _mm256_unpacklo_epi16(h0, zero), vinv);
    const __m256i t1 = trunc8(x1, _mm256_unpackhi_epi16(h0, zero), vinv);
    const __m256i t2 = trunc8(x2, _mm256_unpacklo_epi16(h1, zero), vinv);
    const __m256i t3 = trunc8(x3, _mm256_unpackhi_epi16(h1, zero), vinv);
    // Levels to bytes with unsigned saturation, then min(., s): the scalar
    // body's min and uint8 cast give the same (INT_MIN, from NaN, gives 0).
    __m256i level = _mm256_packus_epi16(_mm256_packus_epi32(t0, t1), _mm256_packus_epi32(t2, t3));
    level = _mm256_min_epu8(level, vs);
    // Signs to bytes the same way (signed saturation keeps the sign bit).
    __m256i sign = _mm256_packs_epi16(
        _mm256_packs_epi32(_mm256_castps_si256(x0), _mm256_castps_si256(x1)),
        _mm256_packs_epi32(_mm256_castps_si256(x2), _mm256_castps_si256(x3)));
    if constexpr (B < 8) sign = _mm256_srli_epi16(sign, 8 - B);
    sign = _mm256_and_si256(sign, _mm256_set1_epi8(static_cast<char>(1u << (B - 1))));
    // The packs interleave 4-code groups across the 128-bit lanes.
    const __m256i codes = _mm256_permutevar8x32_epi32(_mm256_or_si256(level, sign), order);
    if constexpr (B == 8) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), codes);
    } else {
      // Pairs of codes -> 2B bits in 16-bit lanes -> 4 codes in 32-bit lanes.
      __m256i p;
      if constexpr (B <= 6) {
        p = _mm256_maddubs_epi16(codes, _mm256_set1_epi16(static_cast<short>(1 | (1 << (B + 8)))));
      } else {  // 2^7 is not a signed byte
        p = _mm256_or_si256(_mm256_and_si256(codes, _mm256_set1_epi16(0x00ff)),
                            _mm256_srli_epi16(_mm256_and_si256(codes, _mm256_set1_epi16(0x7f00)), 1));
      }
      __m256i d = _mm256_madd_epi16(p, _mm256_set1_epi32(1 | (1 << (2 * B + 16))));
      if constexpr (B % 2 == 1) {  // 4B bits are not whole bytes: 8 codes in 64-bit lanes
        d = _mm256_or_si256(_mm256_and_si256(d, _mm256_set1_epi64x(0xffffffff)),
                            _mm256_slli_epi64(_mm256_srli_epi64(d, 32), 4 * B));
      }
      d = _mm256_shuffle_epi8(d, vcompact);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(d));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * B), _mm256_extracti128_si256(d, 1));
    }
  }
  return steps * 32;
}

// The same step at 512 bits (AVX-512 F/BW/VBMI: Zen 4, Ice Lake and
// later), 64 elements (32 hashes) a step: half the instructions per
// element, the packed bytes gathered by one vpermb and stored as 64 bytes
// (the next step overwrites the 64 - 8B past its own). Bit-identical to
// encode_avx2: the same operations in wider lanes.
#define MURMUR_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vbmi")))

// mix32(c ^ key) in 16 lanes, the first xor-shift folded into one
// ternary op: (c ^ key) ^ ((c ^ key) >> 16) = c ^ (c >> 16) ^ key16, where
// key16 = key ^ (key >> 16).
MURMUR_AVX512 inline __m512i mix32x16(__m512i c, __m512i key16) {
  __m512i h = _mm512_ternarylogic_epi32(c, _mm512_srli_epi32(c, 16), key16, 0x96);
  h = _mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int>(0x85ebca6bu)));
  h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 13));
  h = _mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int>(0xc2b2ae35u)));
  return _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
}

MURMUR_AVX512 inline __m512i trunc16(__m512 x, __m512i u16, __m512 inv_norm_s) {
  const __m512 ax = _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
  const __m512 r = _mm512_mul_ps(ax, inv_norm_s);
  return _mm512_cvttps_epi32(_mm512_fmadd_ps(_mm512_cvtepi32_ps(u16), _mm512_set1_ps(1.0f / 65536.0f), r));
}

template <unsigned B>
MURMUR_AVX512 std::size_t encode_avx512(const float* in, std::size_t n, unsigned s, float inv_norm_s,
                                        std::uint32_t key, std::uint8_t* packed) {
  constexpr std::uint32_t golden = 0x9e3779b9u;
  const std::size_t bytes = packed_bytes(n, B);
  const __m512i vkey16 = _mm512_set1_epi32(static_cast<int>(key ^ (key >> 16)));
  const __m512i vstep = _mm512_set1_epi32(static_cast<int>(16 * golden));
  const __m512 vinv = _mm512_set1_ps(inv_norm_s);
  const __m512i vs = _mm512_set1_epi8(static_cast<char>(s));
  // After the in-lane packs, dword j of 128-bit lane L holds elements
  // 16j + 4L .. 16j + 4L + 3.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  // Byte o of the 8B packed bytes: byte k of the 2B that lane L builds, at
  // the place encode_avx2's pshufb takes it from.
  alignas(64) std::uint8_t gather[64];
  for (unsigned o = 0; o < 64; ++o) {
    const unsigned lane = o / (2 * B) % 4, k = o % (2 * B);
    const unsigned src = B % 2 == 0 ? 4 * (k / (B / 2)) + k % (B / 2) : 8 * (k / B) + k % B;
    gather[o] = static_cast<std::uint8_t>(o < 8 * B ? 16 * lane + src : 0);
  }
  const __m512i vgather = _mm512_load_si512(gather);
  // counter * golden of pairs 0, 1, 8, 9, 2, 3, 10, 11, ...: the in-lane
  // 16-bit unpacks give the uniforms of elements 0-15 and 16-31 in order.
  alignas(64) std::uint32_t c0[16];
  for (unsigned l = 0; l < 16; ++l) c0[l] = (2 * (l / 4) + l % 2 + 8 * (l % 4 / 2)) * golden;
  __m512i ctr = _mm512_load_si512(c0);
  std::size_t steps = n / 64;
  if (bytes < 64) steps = 0;
  else if (steps > (bytes - 64) / (8 * B) + 1) steps = (bytes - 64) / (8 * B) + 1;
  const float* x = in;
  std::uint8_t* out = packed;
  const __m512i zero = _mm512_setzero_si512();
  const __m512i vbit = _mm512_set1_epi8(static_cast<char>(1u << (B - 1)));
  for (std::size_t step = 0; step < steps; ++step, x += 64, out += 8 * B) {
    const __m512i h0 = mix32x16(ctr, vkey16);
    ctr = _mm512_add_epi32(ctr, vstep);
    const __m512i h1 = mix32x16(ctr, vkey16);
    ctr = _mm512_add_epi32(ctr, vstep);
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
    const __m512 x2 = _mm512_loadu_ps(x + 32), x3 = _mm512_loadu_ps(x + 48);
    const __m512i t0 = trunc16(x0, _mm512_unpacklo_epi16(h0, zero), vinv);
    const __m512i t1 = trunc16(x1, _mm512_unpackhi_epi16(h0, zero), vinv);
    const __m512i t2 = trunc16(x2, _mm512_unpacklo_epi16(h1, zero), vinv);
    const __m512i t3 = trunc16(x3, _mm512_unpackhi_epi16(h1, zero), vinv);
    __m512i level = _mm512_packus_epi16(_mm512_packus_epi32(t0, t1), _mm512_packus_epi32(t2, t3));
    level = _mm512_min_epu8(level, vs);
    __m512i sign = _mm512_packs_epi16(
        _mm512_packs_epi32(_mm512_castps_si512(x0), _mm512_castps_si512(x1)),
        _mm512_packs_epi32(_mm512_castps_si512(x2), _mm512_castps_si512(x3)));
    if constexpr (B < 8) sign = _mm512_srli_epi16(sign, 8 - B);
    // level | (sign & bit)
    const __m512i codes = _mm512_permutexvar_epi32(order, _mm512_ternarylogic_epi32(level, sign, vbit, 0xF8));
    if constexpr (B == 8) {
      _mm512_storeu_si512(out, codes);
    } else {
      __m512i p;
      if constexpr (B <= 6) {
        p = _mm512_maddubs_epi16(codes, _mm512_set1_epi16(static_cast<short>(1 | (1 << (B + 8)))));
      } else {
        p = _mm512_or_si512(_mm512_and_si512(codes, _mm512_set1_epi16(0x00ff)),
                            _mm512_srli_epi16(_mm512_and_si512(codes, _mm512_set1_epi16(0x7f00)), 1));
      }
      __m512i d = _mm512_madd_epi16(p, _mm512_set1_epi32(1 | (1 << (2 * B + 16))));
      if constexpr (B % 2 == 1) {
        d = _mm512_or_si512(_mm512_and_si512(d, _mm512_set1_epi64(0xffffffff)),
                            _mm512_slli_epi64(_mm512_srli_epi64(d, 32), 4 * B));
      }
      _mm512_storeu_si512(out, _mm512_permutexvar_epi8(vgather, d));
    }
  }
  return steps * 64;
}

bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("fma");
  return yes;
}

// Elements [0, returned) are decoded (a multiple of 8); *max_level is the
// largest level among them.
template <unsigned B>
MURMUR_AVX2 std::size_t decode_avx2(const std::uint8_t* packed, std::size_t n, float step, float* out,
                                    std::uint32_t* max_level) {
  const std::size_t bytes = packed_bytes(n, B);
  // 32-bit lane j takes the 4 bytes from bit j*B on (byte j*B/8), shifted
  // right by j*B % 8: code j in its low B bits. Both 128-bit lanes hold
  // the same 16 loaded bytes.
  alignas(32) std::int8_t idx[32];
  alignas(32) std::int32_t shift[8];
  for (int j = 0; j < 8; ++j) {
    for (int k = 0; k < 4; ++k) idx[4 * j + k] = static_cast<std::int8_t>(j * int(B) / 8 + k);
    shift[j] = j * int(B) % 8;
  }
  const __m256i vidx = _mm256_load_si256(reinterpret_cast<const __m256i*>(idx));
  const __m256i vshift = _mm256_load_si256(reinterpret_cast<const __m256i*>(shift));
  const __m256i vlevel = _mm256_set1_epi32((1 << (B - 1)) - 1);
  const __m256i vsign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256 vstep = _mm256_set1_ps(step);
  __m256i vmax = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 8 <= n && (i / 8) * B + 16 <= bytes; i += 8) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + (i / 8) * B));
    const __m256i c = _mm256_srlv_epi32(_mm256_shuffle_epi8(_mm256_broadcastsi128_si256(raw), vidx), vshift);
    const __m256i level = _mm256_and_si256(c, vlevel);
    vmax = _mm256_max_epu32(vmax, level);
    const __m256i sign = _mm256_and_si256(_mm256_slli_epi32(c, 32 - B), vsign);
    const __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(level), vstep);
    _mm256_storeu_ps(out + i, _mm256_or_ps(y, _mm256_castsi256_ps(sign)));
  }
  alignas(32) std::uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), vmax);
  std::uint32_t m = 0;
  for (std::uint32_t l : lanes) m = l > m ? l : m;
  *max_level = m;
  return i;
}

bool has_avx2_fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#endif

template <unsigned B>
void encode(const float* in, std::size_t n, unsigned s, float inv_norm_s, std::uint32_t key, std::uint8_t* packed) {
  std::size_t done = 0;
#if MURMUR_QSGD_AVX2
  if (has_avx512()) done = encode_avx512<B>(in, n, s, inv_norm_s, key, packed);
  else if (has_avx2_fma()) done = encode_avx2<B>(in, n, s, inv_norm_s, key, packed);
#endif
  encode_blocks<B>(in, done, n, s, inv_norm_s, key, packed);
}

template <unsigned B>
bool decode(const std::uint8_t* packed, std::size_t n, unsigned s, float step, float* out) {
  std::size_t done = 0;
  std::uint32_t max_level = 0;
#if MURMUR_QSGD_AVX2
  if (has_avx2_fma()) done = decode_avx2<B>(packed, n, step, out, &max_level);
#endif
  return decode_blocks<B>(packed, done, n, s, step, out) && max_level <= s;
}

template <template <unsigned> class F, typename... Args>
auto dispatch_bits(unsigned b, Args&&... args) {
  switch (b) {
    case 2: return F<2>::run(args...);
    case 3: return F<3>::run(args...);
    case 4: return F<4>::run(args...);
    case 5: return F<5>::run(args...);
    case 6: return F<6>::run(args...);
    case 7: return F<7>::run(args...);
    default: return F<8>::run(args...);
  }
}
template <unsigned B> struct Enc { template <typename... A> static bool run(A... a) { encode<B>(a...); return true; } };
template <unsigned B> struct Dec { template <typename... A> static bool run(A... a) { return decode<B>(a...); } };

MURMUR_VECTOR_CLONES double sum_squares(const float* in, std::size_t n) {
  return detail::lane_sum(in, n, [](float v) { return v * v; });
}

}  // namespace

Status qsgd_encode(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n,
                   unsigned s, std::uint64_t seed, float* norm, std::uint8_t* packed) {
  if (scratch == nullptr) { scratch_bytes = 0; return Status::kOk; }
  if (s < 1 || s > kQsgdMaxLevels || n >= (std::size_t(1) << 32)) return Status::kInvalidArgument;
  const double nrm = std::sqrt(sum_squares(in, n));
  *norm = static_cast<float>(nrm);
  const unsigned b = qsgd_bits(s);
  // A zero vector encodes as all-zero levels (inv = 0).
  const float inv = nrm > 0 ? static_cast<float>(double(s) / nrm) : 0.0f;
  dispatch_bits<Enc>(b, in, n, s, inv, seed_key(seed), packed);
  return Status::kOk;
}

Status qsgd_decode(void* scratch, std::size_t& scratch_bytes, const std::uint8_t* packed,
                   std::size_t n, unsigned s, float norm, float* out) {
  if (scratch == nullptr) { scratch_bytes = 0; return Status::kOk; }
  if (s < 1 || s > kQsgdMaxLevels) return Status::kInvalidArgument;
  const float step = norm / static_cast<float>(s);
  const bool ok = dispatch_bits<Dec>(qsgd_bits(s), packed, n, s, step, out);
  return ok ? Status::kOk : Status::kMalformed;
}

}  // namespace murmur::kernels::cpu
