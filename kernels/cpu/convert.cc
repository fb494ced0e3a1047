// fp32 <-> fp16 / bf16, round to nearest even. The fp16 conversion is the
// branch-free bit manipulation of Maratyszcza's FP16 library (it relies on
// the FPU rounding to nearest, the default), which vectorizes with plain
// SSE2 (and AVX2 through MURMUR_VECTOR_CLONES); on x86-64 CPUs that report
// F16C (checked at run time) the hardware conversion is used instead.
#include <bit>
#include <cstdint>

#include "kernels/compress.h"

#include "kernels/cpu/pack.h"

// Not with clang (scripts/fuzz.sh builds with clang 14), whose
// __builtin_cpu_supports does not know "f16c": the portable path there.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define MURMUR_F16C_DISPATCH 1
#endif

namespace murmur::kernels::cpu {
namespace {

inline std::uint16_t half_from_float(float f) {
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  float base = (__builtin_fabsf(f) * scale_to_inf) * scale_to_zero;
  const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t shl1_w = w + w;
  const std::uint32_t sign = w & 0x80000000u;
  std::uint32_t bias = shl1_w & 0xFF000000u;
  bias = bias < 0x71000000u ? 0x71000000u : bias;  // max(): if-converted
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(base);
  const std::uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const std::uint32_t mantissa_bits = bits & 0x00000FFFu;
  const std::uint32_t nonsign = exp_bits + mantissa_bits;
  // Masks instead of ?: so that gcc if-converts and vectorizes the loop.
  const std::uint32_t nan_mask = 0u - static_cast<std::uint32_t>(shl1_w > 0xFF000000u);
  return static_cast<std::uint16_t>((sign >> 16) | (0x7E00u & nan_mask) | (nonsign & ~nan_mask));
}

inline float float_from_half(std::uint16_t h) {
  const std::uint32_t w = std::uint32_t(h) << 16;
  const std::uint32_t sign = w & 0x80000000u;
  const std::uint32_t two_w = w + w;
  const std::uint32_t exp_offset = 0xE0u << 23;
  const float normalized = std::bit_cast<float>((two_w >> 4) + exp_offset) * 0x1.0p-112f;
  const float denormalized = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const std::uint32_t sub_mask = 0u - static_cast<std::uint32_t>(two_w < (1u << 27));
  const std::uint32_t result = sign | (std::bit_cast<std::uint32_t>(denormalized) & sub_mask) |
                               (std::bit_cast<std::uint32_t>(normalized) & ~sub_mask);
  return std::bit_cast<float>(result);
}

inline std::uint16_t bf16_from_float(float f) {
  const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
  const bool nan = (w & 0x7fffffffu) > 0x7f800000u;
  const std::uint32_t rounded = (w + 0x7fffu + ((w >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(nan ? ((w >> 16) | 0x40u) : rounded);
}

#if defined(MURMUR_F16C_DISPATCH)
// The F16C instructions, compiled for this function only and called only
// when the CPU reports them (f16c_ok).
__attribute__((target("avx,f16c"))) void f32_to_f16_hw(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = half_from_float(in[i]);
}
__attribute__((target("avx,f16c"))) void f16_to_f32_hw(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = float_from_half(in[i]);
}
bool f16c_ok() {
  static const bool ok = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return ok;
}
#endif

MURMUR_VECTOR_CLONES void f32_to_bf16_sw(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_from_float(in[i]);
}
MURMUR_VECTOR_CLONES void bf16_to_f32_sw(const std::uint16_t* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(std::uint32_t(in[i]) << 16);
}

}  // namespace

namespace detail {
MURMUR_VECTOR_CLONES void f32_to_f16_sw(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = half_from_float(in[i]);
}
MURMUR_VECTOR_CLONES void f16_to_f32_sw(const std::uint16_t* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = float_from_half(in[i]);
}
}  // namespace detail
using detail::f16_to_f32_sw;
using detail::f32_to_f16_sw;

Status f32_to_f16(void* scratch, std::size_t& scratch_bytes, const float* in, std::uint16_t* out, std::size_t n) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
#if defined(MURMUR_F16C_DISPATCH)
  if (f16c_ok()) {
    f32_to_f16_hw(in, out, n);
    return Status::kOk;
  }
#endif
  f32_to_f16_sw(in, out, n);
  return Status::kOk;
}

Status f16_to_f32(void* scratch, std::size_t& scratch_bytes, const std::uint16_t* in, float* out, std::size_t n) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
#if defined(MURMUR_F16C_DISPATCH)
  if (f16c_ok()) {
    f16_to_f32_hw(in, out, n);
    return Status::kOk;
  }
#endif
  f16_to_f32_sw(in, out, n);
  return Status::kOk;
}

Status f32_to_bf16(void* scratch, std::size_t& scratch_bytes, const float* in, std::uint16_t* out, std::size_t n) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  f32_to_bf16_sw(in, out, n);
  return Status::kOk;
}

Status bf16_to_f32(void* scratch, std::size_t& scratch_bytes, const std::uint16_t* in, float* out, std::size_t n) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  bf16_to_f32_sw(in, out, n);
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
