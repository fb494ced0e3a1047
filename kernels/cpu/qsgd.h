// QSGD's per-element rule, shared by the CPU bodies (kernels/cpu/qsgd.cc) and
// the CUDA twin (kernels/cuda/qsgd.cu), so that every body gives the same
// codes for the same norm; and, for tests, the CPU encode with its body chosen.
//
// level_i = min(floor(128 + s|x_i|/norm + u_i) - 128, s), where the sum is one
// fused multiply-add, fma(|x_i|, inv, 128 + u_i), rounded once to a multiple
// of 2^-16 (the float spacing in [128, 256)); u_i = U_i 2^-16 with U_i the 16
// bits of rng.h's draw_unit16(key, i) (half i & 1 of draw_u32(key, i / 2)).
// 128 + u_i is exact, so the level is bits 16..23 of the sum's float bits and
// E[level] = s|x_i|/norm to 2^-17 of a step. inv = float(s / norm); a zero or
// non-finite norm, or an inv that overflows, encodes every level as 0.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/rng.h"
#include "kernels/status.h"

namespace murmur::kernels {

// inv = s / norm as a float, or 0 where every level is 0.
MURMUR_HD float qsgd_inv(double norm, unsigned s) {
  const float inv = norm > 0 ? static_cast<float>(double(s) / norm) : 0.0f;
  return inv > 0 && inv <= 3.4028234e38f ? inv : 0.0f;
}

// The 16-bit uniform of element i: half i & 1 of draw_u32(key, i / 2), the
// bits of rng.h's draw_unit16(key, i).
MURMUR_HD std::uint32_t qsgd_draw16(std::uint32_t key, std::uint32_t i) {
  return (draw_u32(key, i >> 1) >> ((i & 1u) * 16)) & 0xffffu;
}

// The level of an element with |x| = ax and 16-bit uniform u16 (inv > 0).
MURMUR_HD unsigned qsgd_level(float ax, float inv, std::uint32_t u16, unsigned s) {
#if defined(__CUDA_ARCH__)
  const std::uint32_t t = __float_as_uint(__fmaf_rn(ax, inv, __uint_as_float(0x43000000u + u16)));
#else
  const std::uint32_t bits = 0x43000000u + u16;
  float offset;
  std::memcpy(&offset, &bits, 4);
  const float sum = std::fma(ax, inv, offset);
  std::uint32_t t;
  std::memcpy(&t, &sum, 4);
#endif
  const unsigned level = (t >> 16) & 0xffu;  // >= 128 where the sum reached 256: clamped below
  return level > s ? s : level;
}

}  // namespace murmur::kernels

namespace murmur::kernels::cpu::detail {

// The bodies of the CPU encode. kAuto takes the fastest this CPU runs.
enum class QsgdBody { kAuto, kScalar, kAvx2, kAvx512 };

// Whether this CPU (and build) runs `body`; kAuto and kScalar always.
bool qsgd_body_supported(QsgdBody body);

// For tests: qsgd_encode (kernels/compress.h) with the norm and the
// quantisation done by `body`, which must be supported; with
// store_uniforms, the AVX bodies hash the draws during the norm pass into a
// buffer this call allocates (what qsgd_encode does in its scratch, for up to
// 1.5 Mi elements), else in the quantisation pass. Every combination gives
// the same norm and the same bytes. Blocks until done.
Status qsgd_encode_with(QsgdBody body, bool store_uniforms, const float* in, std::size_t n, unsigned s,
                        std::uint64_t seed, float* norm, std::uint8_t* packed);

}  // namespace murmur::kernels::cpu::detail
