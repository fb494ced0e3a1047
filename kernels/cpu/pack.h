// Fixed-width bit packing shared by the QSGD and sign bodies: 8 codes of B
// bits fill B bytes, little-endian, first code in the lowest bits. Blocks of
// codes are computed by a vectorizable loop first, then packed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace murmur::kernels::cpu::detail {

inline constexpr std::size_t kBlock = 256;  // codes per block (multiple of 8)

// Hot loops are compiled twice, for AVX2 and for the baseline, and chosen
// at load time by the CPU (GCC function multiversioning, an ifunc): no
// -march for the whole build, and the baseline stays the SSE2 contract.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define MURMUR_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MURMUR_VECTOR_CLONES
#endif

// Packing in three widening steps (8 -> 16 -> 32 -> 64 bits), each a
// simple loop over an array that the vectorizer handles, then one store per
// 8 codes. While 8 bytes of the buffer remain, that store is a full 8-byte
// word whose upper bytes the next group overwrites (`end` bounds the buffer).
template <unsigned B>
inline void pack_codes(const std::uint8_t* codes, std::size_t count, std::uint8_t* out, const std::uint8_t* end) {
  static_assert(B >= 1 && B <= 8);
  constexpr std::size_t kMax = kBlock;
  std::uint16_t w16[kMax / 2];
  std::uint32_t w32[kMax / 4];
  std::uint64_t w64[kMax / 8];
  const std::size_t groups = count / 8;
  for (std::size_t i = 0; i < groups * 4; ++i)
    w16[i] = static_cast<std::uint16_t>(codes[2 * i] | (unsigned(codes[2 * i + 1]) << B));
  for (std::size_t i = 0; i < groups * 2; ++i)
    w32[i] = std::uint32_t(w16[2 * i]) | (std::uint32_t(w16[2 * i + 1]) << (2 * B));
  for (std::size_t i = 0; i < groups; ++i)
    w64[i] = std::uint64_t(w32[2 * i]) | (std::uint64_t(w32[2 * i + 1]) << (4 * B));
  std::size_t g = 0;
  for (; g < groups; ++g) {
    if (end - out >= 8) {
      std::memcpy(out, &w64[g], 8);  // little-endian hosts (x86-64, aarch64)
    } else {
      std::memcpy(out, &w64[g], B);
    }
    out += B;
  }
  if (groups * 8 < count) {
    std::uint64_t v = 0;
    for (unsigned j = 0; groups * 8 + j < count; ++j) v |= std::uint64_t(codes[groups * 8 + j]) << (j * B);
    std::memcpy(out, &v, ((count - groups * 8) * B + 7) / 8);
  }
}

// `end` bounds the packed buffer: groups read 8 bytes at once while 8 remain
// (a B-byte memcpy into a zeroed word stalls store-to-load forwarding), then
// narrow in three steps, the mirror of pack_codes.
template <unsigned B>
inline void unpack_codes(const std::uint8_t* in, const std::uint8_t* end, std::size_t count, std::uint8_t* codes) {
  constexpr std::uint64_t mask = (std::uint64_t(1) << B) - 1;
  constexpr std::size_t kMax = kBlock;
  std::uint64_t w64[kMax / 8];
  std::uint32_t w32[kMax / 4];
  std::uint16_t w16[kMax / 2];
  const std::size_t groups = count / 8;
  for (std::size_t g = 0; g < groups; ++g) {
    std::uint64_t v = 0;
    if (end - in >= 8) {
      std::memcpy(&v, in, 8);
    } else {
      std::memcpy(&v, in, B);
    }
    w64[g] = v;
    in += B;
  }
  constexpr std::uint64_t m32 = (std::uint64_t(1) << (4 * B)) - 1;
  constexpr std::uint32_t m16 = (std::uint32_t(1) << (2 * B)) - 1;
  for (std::size_t i = 0; i < groups; ++i) {
    w32[2 * i] = static_cast<std::uint32_t>(w64[i] & m32);
    w32[2 * i + 1] = static_cast<std::uint32_t>((w64[i] >> (4 * B)) & m32);
  }
  for (std::size_t i = 0; i < groups * 2; ++i) {
    w16[2 * i] = static_cast<std::uint16_t>(w32[i] & m16);
    w16[2 * i + 1] = static_cast<std::uint16_t>((w32[i] >> (2 * B)) & m16);
  }
  for (std::size_t i = 0; i < groups * 4; ++i) {
    codes[2 * i] = static_cast<std::uint8_t>(w16[i] & mask);
    codes[2 * i + 1] = static_cast<std::uint8_t>((w16[i] >> B) & mask);
  }
  if (groups * 8 < count) {
    std::uint64_t v = 0;
    std::memcpy(&v, in, ((count - groups * 8) * B + 7) / 8);
    for (unsigned j = 0; groups * 8 + j < count; ++j) codes[groups * 8 + j] = std::uint8_t((v >> (j * B)) & mask);
  }
}

// Sum of f(x_i) with 16 independent lanes, so that the compiler vectorizes it
// without -ffast-math; lanes are added in double at the end.
template <typename F>
inline double lane_sum(const float* x, std::size_t n, F f) {
  float acc[16] = {};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += f(x[i + j]);
  double total = 0;
  for (; i < n; ++i) total += f(x[i]);
  for (float a : acc) total += a;
  return total;
}

}  // namespace murmur::kernels::cpu::detail
