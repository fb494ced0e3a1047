// Scaled sign (signSGD with the l1 scale of Karimireddy et al. 2019): one
// bit per element and one float, scale = ||x||_1 / n.
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/compress.h"
#include "kernels/cpu/pack.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace murmur::kernels::cpu {
namespace {
MURMUR_VECTOR_CLONES double sum_abs(const float* in, std::size_t n) {
  return detail::lane_sum(in, n, [](float v) { return std::fabs(v); });
}
}  // namespace

Status sign_encode(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, float* scale,
                   std::uint8_t* bits) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  const double l1 = sum_abs(in, n);
  *scale = n ? static_cast<float>(l1 / double(n)) : 0.0f;
  std::size_t i = 0;
#if defined(__SSE2__)
  // movmskps: four sign bits per instruction (SSE2 is baseline on x86-64).
  for (; i + 8 <= n; i += 8)
    bits[i / 8] = static_cast<std::uint8_t>(_mm_movemask_ps(_mm_loadu_ps(in + i)) |
                                            (_mm_movemask_ps(_mm_loadu_ps(in + i + 4)) << 4));
#endif
  for (; i + 8 <= n; i += 8) {
    std::uint32_t byte = 0;
    for (unsigned j = 0; j < 8; ++j) byte |= (std::bit_cast<std::uint32_t>(in[i + j]) >> 31) << j;
    bits[i / 8] = static_cast<std::uint8_t>(byte);
  }
  if (i < n) {
    std::uint32_t byte = 0;
    for (unsigned j = 0; i + j < n; ++j) byte |= (std::bit_cast<std::uint32_t>(in[i + j]) >> 31) << j;
    bits[i / 8] = static_cast<std::uint8_t>(byte);
  }
  return Status::kOk;
}

Status sign_decode(void* scratch, std::size_t& scratch_bytes, const std::uint8_t* bits, std::size_t n, float scale,
                   float* out) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  const std::uint32_t mag = std::bit_cast<std::uint32_t>(scale) & 0x7fffffffu;
  // One byte of signs -> 8 floats: a table of 256 x 8 sign masks, OR the
  // magnitude (a vectorizable inner loop of constant length).
  static const auto table = [] {
    struct T {
      alignas(32) std::uint32_t m[256][8];
    } t{};
    for (unsigned b = 0; b < 256; ++b)
      for (unsigned j = 0; j < 8; ++j) t.m[b][j] = ((b >> j) & 1u) << 31;
    return t;
  }();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const std::uint32_t* m = table.m[bits[i / 8]];
    std::uint32_t w[8];
    for (unsigned j = 0; j < 8; ++j) w[j] = mag | m[j];
    std::memcpy(out + i, w, sizeof w);
  }
  for (; i < n; ++i) {
    const std::uint32_t bit = (bits[i / 8] >> (i % 8)) & 1u;
    out[i] = std::bit_cast<float>(mag | (bit << 31));
  }
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
