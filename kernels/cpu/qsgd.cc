// QSGD (Alistarh et al. 2017): unbiased stochastic rounding of |x|/||x||_2 to
// s levels, packed as sign + level in qsgd_bits(s) bits. The per-element rule
// (one fused multiply-add with the uniform in its addend) is in qsgd.h, shared
// with the CUDA twin; the bodies here (scalar, AVX2, AVX-512) all follow it
// bit for bit, and so does the norm, summed in one fixed order by each.
#include "kernels/cpu/qsgd.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MURMUR_QSGD_AVX2 1
#endif

#include "kernels/compress.h"
#include "kernels/cpu/pack.h"
#include "kernels/rng.h"

namespace murmur::kernels::cpu {
namespace {

using detail::QsgdBody;

// ||x||^2: lane j (of 64) sums x[64k + j]^2 over the whole 64-element blocks
// with fused multiply-adds, k ascending; then the lanes in order and the
// tail, in double. 64 float lanes keep four 512-bit (eight 256-bit) chains
// going, so the pass runs at the speed of reading x.
constexpr std::size_t kNormLanes = 64;

void norm_lanes_scalar(const float* in, std::size_t blocks, float* lane) {
  for (std::size_t k = 0; k < blocks; ++k, in += kNormLanes)
    for (std::size_t j = 0; j < kNormLanes; ++j) lane[j] = std::fma(in[j], in[j], lane[j]);
}

// The scalar reference: elements [start, n) in blocks of kBlock codes.
template <unsigned B>
MURMUR_VECTOR_CLONES void encode_blocks(const float* in, std::size_t start, std::size_t n, unsigned s, float inv,
                                        std::uint32_t key, std::uint8_t* packed) {
  // start is a multiple of 8 (whole bytes, an even pair index).
  alignas(64) std::uint8_t codes[detail::kBlock];
  std::uint8_t* const end = packed + packed_bytes(n, B);
  for (std::size_t base = start; base < n; base += detail::kBlock) {
    const std::size_t count = n - base < detail::kBlock ? n - base : detail::kBlock;
    const float* x = in + base;
    auto code = [&](std::size_t j, std::uint32_t u16) {
      const std::uint32_t sign = std::bit_cast<std::uint32_t>(x[j]) >> 31;
      return static_cast<std::uint8_t>(qsgd_level(std::fabs(x[j]), inv, u16, s) | (sign << (B - 1)));
    };
    // Pairs share one hash (draw_unit16's halves); base is even, count is
    // even but for the last block, whose odd tail takes the last half-pair.
    const std::uint32_t pair0 = static_cast<std::uint32_t>(base / 2);
    for (std::size_t q = 0; q < count / 2; ++q) {
      const std::uint32_t h = draw_u32(key, pair0 + static_cast<std::uint32_t>(q));
      codes[2 * q] = code(2 * q, h & 0xffffu);
      codes[2 * q + 1] = code(2 * q + 1, h >> 16);
    }
    if (count % 2) {
      const std::uint32_t h = draw_u32(key, pair0 + static_cast<std::uint32_t>(count / 2));
      codes[count - 1] = code(count - 1, h & 0xffffu);
    }
    detail::pack_codes<B>(codes, count, packed + packed_bytes(base, B), end);
  }
}

// inv == 0 (a zero or non-finite norm): every level is 0, the signs stay.
template <unsigned B>
MURMUR_VECTOR_CLONES void encode_signs(const float* in, std::size_t n, std::uint8_t* packed) {
  alignas(64) std::uint8_t codes[detail::kBlock];
  std::uint8_t* const end = packed + packed_bytes(n, B);
  for (std::size_t base = 0; base < n; base += detail::kBlock) {
    const std::size_t count = n - base < detail::kBlock ? n - base : detail::kBlock;
    for (std::size_t j = 0; j < count; ++j)
      codes[j] = static_cast<std::uint8_t>((std::bit_cast<std::uint32_t>(in[base + j]) >> 31) << (B - 1));
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
// AVX2 (+FMA) and AVX-512 bodies, chosen at run time (__builtin_cpu_supports),
// as target_clones would. Each hashes the counters in vector lanes (counter *
// golden advanced by one add), builds the addend 128 + u with the sign of x
// from the hash halves (one 16-bit unpack against 0x4300, one ternary op),
// does the fused multiply-add, and reads level (bits 16..23) and sign (bit
// 31) of the result's high 16 bits. Their steps end where a store would pass
// the buffer; the scalar blocks finish.
#define MURMUR_AVX2 __attribute__((target("avx2,fma")))
#define MURMUR_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vbmi")))

constexpr std::uint32_t kGolden = 0x9e3779b9u;

// counter * golden of pairs 0, 1, 4, 5, 2, 3, 6, 7 (pair p: elements 2p and
// 2p + 1, low half of the hash first), so that the in-lane 16-bit unpacks
// give the uniforms of elements 0-7 and 8-15 in order; + 8 pairs a vector.
MURMUR_AVX2 inline __m256i avx2_counters() {
  return _mm256_setr_epi32(0, int(1 * kGolden), int(4 * kGolden), int(5 * kGolden), int(2 * kGolden), int(3 * kGolden),
                           int(6 * kGolden), int(7 * kGolden));
}

// murmur3's finaliser (rng.h mix32) in 8 lanes.
MURMUR_AVX2 inline __m256i mix32x8(__m256i h) {
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
  h = _mm256_mullo_epi32(h, _mm256_set1_epi32(static_cast<int>(0x85ebca6bu)));
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
  h = _mm256_mullo_epi32(h, _mm256_set1_epi32(static_cast<int>(0xc2b2ae35u)));
  return _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
}

// fma(x, inv, copysign(128 + u, x)) = +-fma(|x|, inv, 128 + u) (round to
// nearest is symmetric): qsgd_level's sum, with x's sign in bit 31.
// offset = 0x4300 << 16 | u16, the float 128 + u.
MURMUR_AVX2 inline __m256i signed_sum8(__m256 x, __m256i offset, __m256 inv) {
  const __m256 sm = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm256_castps_si256(_mm256_fmadd_ps(x, inv, _mm256_or_ps(_mm256_and_ps(x, sm), _mm256_castsi256_ps(offset))));
}

// Elements [0, returned) are encoded; returns a multiple of 32. A step
// encodes 32 elements (16 hashes) and packs their codes in registers into
// 4B bytes.
template <unsigned B, bool kStored>
MURMUR_AVX2 std::size_t encode_avx2(const float* in, std::size_t n, unsigned s, float inv, std::uint32_t key,
                                    const std::uint8_t* hashes, std::uint8_t* packed) {
  const std::size_t bytes = packed_bytes(n, B);
  // B = 8 stores 32 bytes; else two 16-byte stores at offsets 0 and 2B
  // (the second overwrites the zeros the first leaves past 2B).
  constexpr std::size_t kReach = B == 8 ? 32 : 2 * B + 16;
  const __m256i vkey = _mm256_set1_epi32(static_cast<int>(key));
  const __m256i vstep = _mm256_set1_epi32(static_cast<int>(8 * kGolden));
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i vs = _mm256_set1_epi8(static_cast<char>(s));
  const __m256i c4300 = _mm256_set1_epi16(0x4300);
  const __m256i low_byte = _mm256_set1_epi16(0x00ff);
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
  __m256i ctr = avx2_counters();
  // Stored draws cover the whole 64-element blocks only.
  std::size_t steps = kStored ? n / 64 * 2 : n / 32;
  if (bytes < kReach)
    steps = 0;
  else if (steps > (bytes - kReach) / (4 * B) + 1)
    steps = (bytes - kReach) / (4 * B) + 1;
  const float* x = in;
  std::uint8_t* out = packed;
  for (std::size_t step = 0; step < steps; ++step, x += 32, out += 4 * B) {
    __m256i h0, h1;
    if constexpr (kStored) {
      h0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hashes + 64 * step));
      h1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hashes + 64 * step + 32));
    } else {
      h0 = mix32x8(_mm256_xor_si256(ctr, vkey));
      ctr = _mm256_add_epi32(ctr, vstep);
      h1 = mix32x8(_mm256_xor_si256(ctr, vkey));
      ctr = _mm256_add_epi32(ctr, vstep);
    }
    const __m256i v0 = signed_sum8(_mm256_loadu_ps(x), _mm256_unpacklo_epi16(h0, c4300), vinv);
    const __m256i v1 = signed_sum8(_mm256_loadu_ps(x + 8), _mm256_unpackhi_epi16(h0, c4300), vinv);
    const __m256i v2 = signed_sum8(_mm256_loadu_ps(x + 16), _mm256_unpacklo_epi16(h1, c4300), vinv);
    const __m256i v3 = signed_sum8(_mm256_loadu_ps(x + 24), _mm256_unpackhi_epi16(h1, c4300), vinv);
    // High halves (at most 0xc3ff, so no saturation): level | (0x43 | sign << 7) << 8.
    const __m256i w01 = _mm256_packus_epi32(_mm256_srli_epi32(v0, 16), _mm256_srli_epi32(v1, 16));
    const __m256i w23 = _mm256_packus_epi32(_mm256_srli_epi32(v2, 16), _mm256_srli_epi32(v3, 16));
    const __m256i level =
        _mm256_min_epu8(_mm256_packus_epi16(_mm256_and_si256(w01, low_byte), _mm256_and_si256(w23, low_byte)), vs);
    // Signed saturation of the halves: 0x80 where x is negative, else 0x7f.
    __m256i sign = _mm256_packs_epi16(w01, w23);
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
        p = _mm256_or_si256(_mm256_and_si256(codes, low_byte),
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

// counter * golden of pairs 0, 1, 8, 9, 2, 3, 10, 11, ...: the in-lane
// 16-bit unpacks give the uniforms of elements 0-15 and 16-31 in order.
MURMUR_AVX512 inline __m512i avx512_counters() {
  alignas(64) std::uint32_t c0[16];
  for (unsigned l = 0; l < 16; ++l) c0[l] = (2 * (l / 4) + l % 2 + 8 * (l % 4 / 2)) * kGolden;
  return _mm512_load_si512(c0);
}

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

// signed_sum8 in 16 lanes; the copysign is one ternary op, (x & sm) | offset.
MURMUR_AVX512 inline __m512i signed_sum16(const float* x, __m512i offset, __m512 inv) {
  const __m512i v = _mm512_loadu_si512(x);
  const __m512i sm = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i addend = _mm512_ternarylogic_epi32(v, sm, offset, 0xEA);
  return _mm512_castps_si512(_mm512_fmadd_ps(_mm512_castsi512_ps(v), inv, _mm512_castsi512_ps(addend)));
}

// The same rule at 512 bits (AVX-512 F/BW/VBMI: Zen 4, Ice Lake and later),
// 64 elements (32 hashes) a step. The high halves of the four sums go to two
// registers with one vpermt2w each, levels and sign bytes to one register
// each with one vpermt2b (natural order, no fix-up permute), and the packed
// 8B bytes to a 64-byte store with one vpermb (the next step overwrites what
// lies past its 8B bytes).
template <unsigned B, bool kStored>
MURMUR_AVX512 std::size_t encode_avx512(const float* in, std::size_t n, unsigned s, float inv, std::uint32_t key,
                                        const std::uint8_t* hashes, std::uint8_t* packed) {
  const std::size_t bytes = packed_bytes(n, B);
  const __m512i vkey16 = _mm512_set1_epi32(static_cast<int>(key ^ (key >> 16)));
  const __m512i vstep = _mm512_set1_epi32(static_cast<int>(16 * kGolden));
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512i vs = _mm512_set1_epi8(static_cast<char>(s));
  const __m512i c4300 = _mm512_set1_epi16(0x4300);
  const __m512i vbit = _mm512_set1_epi8(static_cast<char>(1u << (B - 1)));
  // vpermt2w with high_words: the high halves of the 32 elements in two
  // sums, in order; vpermt2b with level_bytes (sign_bytes): their low (high)
  // bytes, the level before the clamp (0x43 | sign << 7), for all 64.
  alignas(64) std::uint16_t high_words[32];
  alignas(64) std::uint8_t level_bytes[64], sign_bytes[64];
  for (unsigned j = 0; j < 32; ++j) high_words[j] = static_cast<std::uint16_t>(2 * j + 1);
  for (unsigned j = 0; j < 64; ++j) {
    level_bytes[j] = static_cast<std::uint8_t>(2 * j);
    sign_bytes[j] = static_cast<std::uint8_t>(2 * j + 1);
  }
  const __m512i vhigh = _mm512_load_si512(high_words);
  const __m512i vlevel = _mm512_load_si512(level_bytes), vsign = _mm512_load_si512(sign_bytes);
  // Byte o of the 8B packed bytes: byte k of the 2B that 128-bit lane L of
  // the madd result holds (4 codes per 32-bit lane for even B, 8 per 64-bit
  // lane for odd B).
  alignas(64) std::uint8_t gather[64];
  for (unsigned o = 0; o < 64; ++o) {
    const unsigned lane = o / (2 * B) % 4, k = o % (2 * B);
    const unsigned src = B % 2 == 0 ? 4 * (k / (B / 2)) + k % (B / 2) : 8 * (k / B) + k % B;
    gather[o] = static_cast<std::uint8_t>(o < 8 * B ? 16 * lane + src : 0);
  }
  const __m512i vgather = _mm512_load_si512(gather);
  __m512i ctr = avx512_counters();
  std::size_t steps = n / 64;
  if (bytes < 64)
    steps = 0;
  else if (steps > (bytes - 64) / (8 * B) + 1)
    steps = (bytes - 64) / (8 * B) + 1;
  const float* x = in;
  std::uint8_t* out = packed;
  for (std::size_t step = 0; step < steps; ++step, x += 64, out += 8 * B) {
    __m512i h0, h1;
    if constexpr (kStored) {
      h0 = _mm512_loadu_si512(hashes + 128 * step);
      h1 = _mm512_loadu_si512(hashes + 128 * step + 64);
    } else {
      h0 = mix32x16(ctr, vkey16);
      ctr = _mm512_add_epi32(ctr, vstep);
      h1 = mix32x16(ctr, vkey16);
      ctr = _mm512_add_epi32(ctr, vstep);
    }
    const __m512i v0 = signed_sum16(x, _mm512_unpacklo_epi16(h0, c4300), vinv);
    const __m512i v1 = signed_sum16(x + 16, _mm512_unpackhi_epi16(h0, c4300), vinv);
    const __m512i v2 = signed_sum16(x + 32, _mm512_unpacklo_epi16(h1, c4300), vinv);
    const __m512i v3 = signed_sum16(x + 48, _mm512_unpackhi_epi16(h1, c4300), vinv);
    const __m512i a = _mm512_permutex2var_epi16(v0, vhigh, v1), b = _mm512_permutex2var_epi16(v2, vhigh, v3);
    const __m512i level = _mm512_min_epu8(_mm512_permutex2var_epi8(a, vlevel, b), vs);
    __m512i sign = _mm512_permutex2var_epi8(a, vsign, b);  // 0x43 | sign << 7
    if constexpr (B < 8) sign = _mm512_srli_epi16(sign, 8 - B);
    const __m512i codes = _mm512_ternarylogic_epi32(level, sign, vbit, 0xF8);  // level | (sign & bit)
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

// The norm lanes (see kNormLanes), and with `hashes` the draws of every
// whole 64-element block too, in the order that encode_avx2 / encode_avx512
// read them back (the stored-uniform mode: this pass waits on reading x and
// has vector slots to spare, the quantisation pass has none).
template <bool kStore>
MURMUR_AVX2 void norm_lanes_avx2(const float* in, std::size_t blocks, float* lane, std::uint32_t key,
                                 std::uint8_t* hashes) {
  __m256 acc[8];
  for (auto& a : acc) a = _mm256_setzero_ps();
  const __m256i vkey = _mm256_set1_epi32(static_cast<int>(key));
  const __m256i vstep = _mm256_set1_epi32(static_cast<int>(8 * kGolden));
  __m256i ctr = avx2_counters();
  for (std::size_t k = 0; k < blocks; ++k, in += kNormLanes) {
    for (int q = 0; q < 8; ++q) {
      const __m256 v = _mm256_loadu_ps(in + 8 * q);
      acc[q] = _mm256_fmadd_ps(v, v, acc[q]);
    }
    if constexpr (kStore) {
      for (int q = 0; q < 4; ++q, ctr = _mm256_add_epi32(ctr, vstep)) {
        const __m256i h = mix32x8(_mm256_xor_si256(ctr, vkey));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(hashes + 128 * k + 32 * q), h);
      }
    }
  }
  for (int q = 0; q < 8; ++q) _mm256_storeu_ps(lane + 8 * q, acc[q]);
}

// The AVX-512 body sums with 256-bit loads unless it stores draws: from DRAM
// (64 Mi floats) the 512-bit loop took 15-17 ms against 13.5, in cache the
// same; with the hashing, 512-bit is 10% faster (fewer instructions).
MURMUR_AVX512 void norm_lanes_avx512_store(const float* in, std::size_t blocks, float* lane, std::uint32_t key,
                                           std::uint8_t* hashes) {
  __m512 acc[4];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const __m512i vkey16 = _mm512_set1_epi32(static_cast<int>(key ^ (key >> 16)));
  const __m512i vstep = _mm512_set1_epi32(static_cast<int>(16 * kGolden));
  __m512i ctr = avx512_counters();
  for (std::size_t k = 0; k < blocks; ++k, in += kNormLanes) {
    for (int q = 0; q < 4; ++q) {
      const __m512 v = _mm512_loadu_ps(in + 16 * q);
      acc[q] = _mm512_fmadd_ps(v, v, acc[q]);
    }
    for (int q = 0; q < 2; ++q, ctr = _mm512_add_epi32(ctr, vstep))
      _mm512_storeu_si512(hashes + 128 * k + 64 * q, mix32x16(ctr, vkey16));
  }
  for (int q = 0; q < 4; ++q) _mm512_storeu_ps(lane + 16 * q, acc[q]);
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

QsgdBody resolve(QsgdBody body) {
  if (body != QsgdBody::kAuto) return body;
#if MURMUR_QSGD_AVX2
  if (has_avx512()) return QsgdBody::kAvx512;
  if (has_avx2_fma()) return QsgdBody::kAvx2;
#endif
  return QsgdBody::kScalar;
}

// The stored-uniform mode keeps 2 bytes an element (writes them in the norm
// pass, reads them back in the quantisation pass): worth it while x, the
// draws and the codes stay well inside the last-level cache. On the 32 MiB
// L3 EPYC it measured 5-10% faster up to 1.5 Mi elements and 10% slower at 2.
constexpr std::size_t kStoredMax = std::size_t(3) << 19;

// Scratch bytes of the stored-uniform mode (0 where `body` does not use it).
std::size_t stored_bytes(QsgdBody body, std::size_t n) {
  if ((body != QsgdBody::kAvx2 && body != QsgdBody::kAvx512) || n > kStoredMax) return 0;
  return n / kNormLanes * 128;
}

double sum_squares(QsgdBody body, const float* in, std::size_t n, std::uint32_t key, std::uint8_t* hashes) {
  alignas(64) float lane[kNormLanes] = {};
  const std::size_t blocks = n / kNormLanes;
  switch (body) {
#if MURMUR_QSGD_AVX2
    case QsgdBody::kAvx512:
    case QsgdBody::kAvx2:
      if (hashes == nullptr)
        norm_lanes_avx2<false>(in, blocks, lane, key, hashes);
      else if (body == QsgdBody::kAvx512)
        norm_lanes_avx512_store(in, blocks, lane, key, hashes);
      else
        norm_lanes_avx2<true>(in, blocks, lane, key, hashes);
      break;
#endif
    default:
      norm_lanes_scalar(in, blocks, lane);
      break;
  }
  double total = 0;
  for (float v : lane) total += v;
  for (std::size_t i = blocks * kNormLanes; i < n; ++i) total += double(in[i]) * in[i];
  return total;
}

template <unsigned B>
void encode(QsgdBody body, const float* in, std::size_t n, unsigned s, float inv, std::uint32_t key,
            const std::uint8_t* hashes, std::uint8_t* packed) {
  if (inv == 0) {
    encode_signs<B>(in, n, packed);
    return;
  }
  std::size_t done = 0;
#if MURMUR_QSGD_AVX2
  if (body == QsgdBody::kAvx512)
    done = hashes ? encode_avx512<B, true>(in, n, s, inv, key, hashes, packed)
                  : encode_avx512<B, false>(in, n, s, inv, key, hashes, packed);
  else if (body == QsgdBody::kAvx2)
    done = hashes ? encode_avx2<B, true>(in, n, s, inv, key, hashes, packed)
                  : encode_avx2<B, false>(in, n, s, inv, key, hashes, packed);
#endif
  encode_blocks<B>(in, done, n, s, inv, key, packed);
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
    case 2:
      return F<2>::run(args...);
    case 3:
      return F<3>::run(args...);
    case 4:
      return F<4>::run(args...);
    case 5:
      return F<5>::run(args...);
    case 6:
      return F<6>::run(args...);
    case 7:
      return F<7>::run(args...);
    default:
      return F<8>::run(args...);
  }
}
template <unsigned B>
struct Enc {
  template <typename... A>
  static bool run(A... a) {
    encode<B>(a...);
    return true;
  }
};
template <unsigned B>
struct Dec {
  template <typename... A>
  static bool run(A... a) {
    return decode<B>(a...);
  }
};

// hashes: null, or stored_bytes(body, n) bytes for the stored-uniform mode.
Status encode_with(QsgdBody body, std::uint8_t* hashes, const float* in, std::size_t n, unsigned s, std::uint64_t seed,
                   float* norm, std::uint8_t* packed) {
  const std::uint32_t key = seed_key(seed);
  const double nrm = std::sqrt(sum_squares(body, in, n, key, hashes));
  *norm = static_cast<float>(nrm);
  dispatch_bits<Enc>(qsgd_bits(s), body, in, n, s, qsgd_inv(nrm, s), key, hashes, packed);
  return Status::kOk;
}

bool valid(std::size_t n, unsigned s) { return s >= 1 && s <= kQsgdMaxLevels && n < (std::size_t(1) << 32); }

}  // namespace

namespace detail {

bool qsgd_body_supported(QsgdBody body) {
#if MURMUR_QSGD_AVX2
  if (body == QsgdBody::kAvx512) return has_avx512();
  if (body == QsgdBody::kAvx2) return has_avx2_fma();
#else
  if (body == QsgdBody::kAvx512 || body == QsgdBody::kAvx2) return false;
#endif
  return true;
}

Status qsgd_encode_with(QsgdBody body, bool store_uniforms, const float* in, std::size_t n, unsigned s,
                        std::uint64_t seed, float* norm, std::uint8_t* packed) {
  if (!valid(n, s) || !qsgd_body_supported(body)) return Status::kInvalidArgument;
  body = resolve(body);
  std::vector<std::uint8_t> hashes(store_uniforms ? stored_bytes(body, n) : 0);
  return encode_with(body, hashes.empty() ? nullptr : hashes.data(), in, n, s, seed, norm, packed);
}

}  // namespace detail

Status qsgd_encode(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, unsigned s,
                   std::uint64_t seed, float* norm, std::uint8_t* packed) {
  const QsgdBody body = resolve(QsgdBody::kAuto);
  const std::size_t need = stored_bytes(body, n);
  if (scratch == nullptr) {
    scratch_bytes = need;
    return Status::kOk;
  }
  if (!valid(n, s)) return Status::kInvalidArgument;
  if (scratch_bytes < need) return Status::kScratchTooSmall;
  return encode_with(body, need ? static_cast<std::uint8_t*>(scratch) : nullptr, in, n, s, seed, norm, packed);
}

Status qsgd_decode(void* scratch, std::size_t& scratch_bytes, const std::uint8_t* packed, std::size_t n, unsigned s,
                   float norm, float* out) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (s < 1 || s > kQsgdMaxLevels) return Status::kInvalidArgument;
  const float step = norm / static_cast<float>(s);
  const bool ok = dispatch_bits<Dec>(qsgd_bits(s), packed, n, s, step, out);
  return ok ? Status::kOk : Status::kMalformed;
}

}  // namespace murmur::kernels::cpu
