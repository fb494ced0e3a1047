// QSGD (Alistarh et al. 2017): unbiased stochastic rounding of |x|/||x||_2 to
// s levels, packed as sign + level in qsgd_bits(s) bits.
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/compress.h"
#include "kernels/cpu/pack.h"
#include "kernels/rng.h"

namespace murmur::kernels::cpu {
namespace {

template <unsigned B>
MURMUR_VECTOR_CLONES void encode_blocks(const float* in, std::size_t n, unsigned s, float inv_norm_s, std::uint32_t key,
                   std::uint8_t* packed) {
  alignas(64) std::uint8_t codes[detail::kBlock];
  std::uint8_t* const end = packed + packed_bytes(n, B);
  for (std::size_t base = 0; base < n; base += detail::kBlock) {
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
MURMUR_VECTOR_CLONES bool decode_blocks(const std::uint8_t* packed, std::size_t n, unsigned s, float step, float* out) {
  alignas(64) std::uint8_t codes[detail::kBlock];
  constexpr std::uint8_t level_mask = (1u << (B - 1)) - 1;
  const std::uint8_t* end = packed + packed_bytes(n, B);
  std::uint8_t max_level = 0;
  for (std::size_t base = 0; base < n; base += detail::kBlock) {
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
template <unsigned B> struct Enc { template <typename... A> static bool run(A... a) { encode_blocks<B>(a...); return true; } };
template <unsigned B> struct Dec { template <typename... A> static bool run(A... a) { return decode_blocks<B>(a...); } };

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
