// CPU reference kernels: round trips against expected values and statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/compress.h"
#include "kernels/cpu/qsgd.h"
#include "random_vectors.h"
#include "scratch_calls.h"

namespace mk = murmur::kernels;
namespace cpu = murmur::kernels::cpu;
using mk::Status;
using murmur::testing::randn;
using murmur::testing::run_host_scratch;

namespace {

TEST(Fp16, RoundTripWithinHalfUlp) {
  auto x = randn(10007, 1, 3.0f);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = 65504.0f;
  x[3] = 1e6f;
  x[4] = 1e-8f;
  x[5] = -6.1e-5f;
  std::vector<std::uint16_t> h(x.size());
  std::vector<float> y(x.size());
  ASSERT_EQ(
      run_host_scratch([&](void* s, std::size_t& b) { return cpu::f32_to_f16(s, b, x.data(), h.data(), x.size()); }),
      Status::kOk);
  ASSERT_EQ(
      run_host_scratch([&](void* s, std::size_t& b) { return cpu::f16_to_f32(s, b, h.data(), y.data(), x.size()); }),
      Status::kOk);
  EXPECT_EQ(h[0], 0x0000);
  EXPECT_EQ(h[1], 0x8000);
  EXPECT_EQ(h[2], 0x7bff);
  EXPECT_EQ(h[3], 0x7c00);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::fabs(x[i]) > 65504.0f) continue;
    // relative error 2^-11 for normals, absolute 2^-25 in the subnormal range
    const float bound = std::max(std::fabs(x[i]) * 0x1p-11f, 0x1p-25f);
    EXPECT_LE(std::fabs(y[i] - x[i]), bound) << "i=" << i << " x=" << x[i];
  }
}

TEST(Fp16, PortableBodyMatchesDispatched) {
  // f32_to_f16 may use F16C; the portable body must give the same bits.
  auto x = randn(4099, 9, 1000.0f);
  for (std::size_t i = 0; i < 64; ++i) x[i] = std::ldexp(1.0f + i / 64.0f, -30 + int(i));  // subnormal..overflow
  x[64] = std::nanf("");
  x[65] = -INFINITY;
  std::vector<std::uint16_t> a(x.size()), b(x.size());
  std::size_t bytes = 0;
  ASSERT_EQ(cpu::f32_to_f16(a.data(), bytes, x.data(), a.data(), x.size()), Status::kOk);
  cpu::detail::f32_to_f16_sw(x.data(), b.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    if (i != 64) {
      EXPECT_EQ(a[i], b[i]) << "x=" << x[i];
    }
  std::vector<std::uint16_t> all(65536);
  std::iota(all.begin(), all.end(), 0);
  std::vector<float> ya(all.size()), yb(all.size());
  ASSERT_EQ(cpu::f16_to_f32(ya.data(), bytes, all.data(), ya.data(), all.size()), Status::kOk);
  cpu::detail::f16_to_f32_sw(all.data(), yb.data(), all.size());
  for (std::size_t h = 0; h < all.size(); ++h)
    if (!std::isnan(ya[h])) {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(ya[h]), std::bit_cast<std::uint32_t>(yb[h])) << h;
    }
}

TEST(Fp16, TiesRoundToEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: even mantissa is 1.0.
  const float x[3] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, std::nanf("")};
  std::uint16_t h[3];
  std::size_t b = 0;
  ASSERT_EQ(cpu::f32_to_f16(h, b, x, h, 3), Status::kOk);
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0x3c02);
  EXPECT_EQ(h[2] & 0x7c00, 0x7c00);
  EXPECT_NE(h[2] & 0x03ff, 0);
}

TEST(Bf16, RoundTripAndTies) {
  auto x = randn(4099, 2, 100.0f);
  std::vector<std::uint16_t> h(x.size());
  std::vector<float> y(x.size());
  std::size_t b = 0;
  ASSERT_EQ(cpu::f32_to_bf16(h.data(), b, x.data(), h.data(), x.size()), Status::kOk);
  ASSERT_EQ(cpu::bf16_to_f32(h.data(), b, h.data(), y.data(), x.size()), Status::kOk);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * 0x1p-8f) << i;
  const float t[3] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, std::nanf("")};
  std::uint16_t o[3];
  ASSERT_EQ(cpu::f32_to_bf16(o, b, t, o, 3), Status::kOk);
  EXPECT_EQ(o[0], 0x3f80);  // tie to even (down)
  EXPECT_EQ(o[1], 0x3f82);  // tie to even (up)
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(std::uint32_t(o[2]) << 16)));
}

struct QsgdCase {
  unsigned s;
  std::size_t n;
};
class Qsgd : public ::testing::TestWithParam<QsgdCase> {};

TEST_P(Qsgd, LevelsBoundedAndUnbiased) {
  const auto [s, n] = GetParam();
  const auto x = randn(n, 3);
  const unsigned bits = mk::qsgd_bits(s);
  std::vector<std::uint8_t> packed(mk::packed_bytes(n, bits));
  std::vector<float> y(n), mean(n, 0.0f);
  const double norm2 = std::sqrt(std::inner_product(x.begin(), x.end(), x.begin(), 0.0));
  const int draws = 400;
  for (int d = 0; d < draws; ++d) {
    float norm = 0;
    ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
                return cpu::qsgd_encode(sc, b, x.data(), n, s, 1000 + d, &norm, packed.data());
              }),
              Status::kOk);
    EXPECT_NEAR(norm, norm2, 1e-5 * norm2);
    ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
                return cpu::qsgd_decode(sc, b, packed.data(), n, s, norm, y.data());
              }),
              Status::kOk);
    const float step = norm / s;
    for (std::size_t i = 0; i < n; ++i) {
      // one of the two levels around |x_i|, with x_i's sign (or zero)
      EXPECT_LE(std::fabs(y[i] - x[i]), step * 1.0001f) << i;
      if (y[i] != 0) {
        EXPECT_EQ(std::signbit(y[i]), std::signbit(x[i]));
      }
      mean[i] += y[i] / draws;
    }
  }
  // Unbiased: the mean of the draws approaches x; the error of one draw has
  // variance <= step^2/4, so the mean's is <= step^2/(4 draws).
  const float step = float(norm2) / s;
  double err = 0;
  for (std::size_t i = 0; i < n; ++i) err += double(mean[i] - x[i]) * (mean[i] - x[i]);
  EXPECT_LT(std::sqrt(err / n), 1.5 * step / (2 * std::sqrt(double(draws))));
}

INSTANTIATE_TEST_SUITE_P(Levels, Qsgd,
                         ::testing::Values(QsgdCase{1, 64}, QsgdCase{4, 1001}, QsgdCase{16, 257}, QsgdCase{127, 100},
                                           QsgdCase{3, 4099}));

TEST(Qsgd, WireSizeAndMalformed) {
  EXPECT_EQ(mk::qsgd_bits(1), 2u);
  EXPECT_EQ(mk::qsgd_bits(16), 6u);
  EXPECT_EQ(mk::qsgd_bits(127), 8u);
  EXPECT_EQ(mk::packed_bytes(1000, 6), 750u);
  EXPECT_EQ(mk::packed_bytes(3, 6), 3u);
  // s = 4 uses 3 level bits; level 7 > 4 must be rejected.
  std::vector<std::uint8_t> packed(mk::packed_bytes(8, 4), 0x77);
  std::vector<float> y(8);
  std::size_t b = 0;
  EXPECT_EQ(cpu::qsgd_decode(y.data(), b, packed.data(), 8, 4, 1.0f, y.data()), Status::kMalformed);
}

// The rule of kernels/cpu/qsgd.h written out element by element: the norm
// (64 float lanes of fused multiply-adds over whole 64-element blocks, then
// lanes and tail in double), the draws, the level, the sign and the packing.
std::vector<std::uint8_t> qsgd_reference(const std::vector<float>& x, unsigned s, std::uint64_t seed, float* norm) {
  const std::size_t n = x.size(), blocks = n / 64;
  float lane[64] = {};
  for (std::size_t k = 0; k < blocks; ++k)
    for (std::size_t j = 0; j < 64; ++j) lane[j] = std::fma(x[64 * k + j], x[64 * k + j], lane[j]);
  double sq = 0;
  for (float v : lane) sq += v;
  for (std::size_t i = blocks * 64; i < n; ++i) sq += double(x[i]) * x[i];
  *norm = static_cast<float>(std::sqrt(sq));
  const float inv = mk::qsgd_inv(std::sqrt(sq), s);
  const std::uint32_t key = mk::seed_key(seed);
  const unsigned bits = mk::qsgd_bits(s);
  std::vector<std::uint8_t> packed(mk::packed_bytes(n, bits), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned level =
        inv > 0 ? mk::qsgd_level(std::fabs(x[i]), inv, mk::qsgd_draw16(key, std::uint32_t(i)), s) : 0;
    const unsigned code = level | (std::signbit(x[i]) ? 1u << (bits - 1) : 0u);
    for (unsigned b = 0; b < bits; ++b)
      if (code >> b & 1) packed[(i * bits + b) / 8] |= static_cast<std::uint8_t>(1u << ((i * bits + b) % 8));
  }
  return packed;
}

// Inputs that reach every branch: sizes around the vector widths (32, 64)
// and the 64-byte stores, zeros of both signs, subnormals, a dominating
// element (a level at s), magnitudes whose squares round to subnormals, and
// one whose square rounds down so far that s|x|/norm = 1.18 s (the levels
// above s that the clamp catches).
std::vector<float> qsgd_input(std::size_t n, unsigned variant) {
  auto x = randn(n, 17 + variant, variant == 3 ? 1e-21f : 1.0f);
  if (variant == 1 && n > 0) x[n / 3] = 1e4f;
  if (variant == 2)
    for (std::size_t i = 0; i < n; i += 5) x[i] = i % 2 ? 0.0f : -0.0f;
  if (variant == 2 && n > 4) {
    x[1] = 1e-40f;
    x[3] = -1e-44f;
  }
  if (variant == 4) {
    std::fill(x.begin(), x.end(), 0.0f);
    if (n > 0) x[n / 2] = -4.4e-23f;  // x^2 = 1.38 subnormal units, rounded to 1
  }
  return x;
}

TEST(Qsgd, EveryBodyFollowsTheRule) {
  using Body = cpu::detail::QsgdBody;
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 200; ++n) sizes.push_back(n);
  for (std::size_t n : {255, 257, 511, 1025, 4097, 65537}) sizes.push_back(n);
  int vector_bodies = 0;
  for (Body body : {Body::kAvx2, Body::kAvx512}) vector_bodies += cpu::detail::qsgd_body_supported(body);
  for (std::size_t n : sizes)
    for (unsigned s : {1u, 2u, 3u, 5u, 9u, 16u, 31u, 33u, 64u, 127u})  // 2..8 bits
      for (unsigned variant = 0; variant < 5; ++variant) {
        const auto x = qsgd_input(n, variant);
        float ref_norm = 0;
        const auto ref = qsgd_reference(x, s, 5 + n, &ref_norm);
        for (Body body : {Body::kScalar, Body::kAvx2, Body::kAvx512})
          for (bool store : {false, true}) {
            if (!cpu::detail::qsgd_body_supported(body)) continue;
            std::vector<std::uint8_t> packed(ref.size() + 64, 0xa5);  // 64 guard bytes
            float norm = -1;
            ASSERT_EQ(cpu::detail::qsgd_encode_with(body, store, x.data(), n, s, 5 + n, &norm, packed.data()),
                      Status::kOk);
            const auto where = ::testing::Message() << "n=" << n << " s=" << s << " variant=" << variant
                                                    << " body=" << int(body) << " store=" << store;
            ASSERT_EQ(std::bit_cast<std::uint32_t>(norm), std::bit_cast<std::uint32_t>(ref_norm)) << where;
            ASSERT_TRUE(std::equal(ref.begin(), ref.end(), packed.begin())) << where;
            ASSERT_TRUE(std::all_of(packed.begin() + ref.size(), packed.end(), [](std::uint8_t b) {
              return b == 0xa5;
            })) << where;
          }
        // The public call (this CPU's fastest body, its scratch) gives the same.
        std::vector<std::uint8_t> packed(ref.size());
        float norm = 0;
        ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
                    return cpu::qsgd_encode(sc, b, x.data(), n, s, 5 + n, &norm, packed.data());
                  }),
                  Status::kOk);
        ASSERT_EQ(packed, ref) << "n=" << n << " s=" << s << " variant=" << variant;
      }
  if (vector_bodies == 0)
    GTEST_SKIP() << "only the scalar body runs on this CPU (no AVX2+FMA): checked against the rule alone";
}

TEST(Qsgd, NonFiniteOrZeroNormGivesZeroLevels) {
  using Body = cpu::detail::QsgdBody;
  for (float special : {NAN, INFINITY, -INFINITY, 0.0f})
    for (std::size_t n : {1u, 7u, 64u, 100u, 1000u}) {
      std::vector<float> x(n, special == 0.0f ? -0.0f : 0.5f);
      for (std::size_t i = 0; i < n; i += 3) x[i] = -x[i];
      x[n / 2] = special;
      const unsigned bits = mk::qsgd_bits(16);
      for (Body body : {Body::kScalar, Body::kAvx2, Body::kAvx512})
        for (bool store : {false, true}) {
          if (!cpu::detail::qsgd_body_supported(body)) continue;
          std::vector<std::uint8_t> packed(mk::packed_bytes(n, bits));
          std::vector<float> y(n);
          float norm = 0;
          ASSERT_EQ(cpu::detail::qsgd_encode_with(body, store, x.data(), n, 16, 3, &norm, packed.data()), Status::kOk);
          // Decode with norm 1: every level 0, so every value is +-0 with x's sign.
          ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
                      return cpu::qsgd_decode(sc, b, packed.data(), n, 16, 1.0f, y.data());
                    }),
                    Status::kOk);
          for (std::size_t i = 0; i < n; ++i) {
            EXPECT_EQ(y[i], 0.0f) << "special=" << special << " n=" << n << " i=" << i;
            EXPECT_EQ(std::signbit(y[i]), std::signbit(x[i])) << "special=" << special << " n=" << n << " i=" << i;
          }
        }
    }
}

TEST(Qsgd, MeanLevelIsTheScaledMagnitude) {
  // 10000 = 156 * 64 + 16 elements of magnitude 1: s|x|/norm = 127/100, so
  // each level is 1 or 2 and the mean over the elements is 1.27, within
  // 4 standard deviations (sqrt(0.27 * 0.73 / n) = 0.0044) for every seed.
  const std::size_t n = 10000;
  std::vector<float> x(n, 1.0f);
  for (std::size_t i = 0; i < n; i += 2) x[i] = -1.0f;
  std::vector<std::uint8_t> packed(mk::packed_bytes(n, mk::qsgd_bits(127)));
  std::vector<float> y(n);
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    float norm = 0;
    ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
                return cpu::qsgd_encode(sc, b, x.data(), n, 127, seed, &norm, packed.data());
              }),
              Status::kOk);
    ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
                return cpu::qsgd_decode(sc, b, packed.data(), n, 127, 127.0f, y.data());
              }),
              Status::kOk);
    double mean = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(std::fabs(y[i]) == 1.0f || std::fabs(y[i]) == 2.0f) << i << ": " << y[i];
      ASSERT_EQ(std::signbit(y[i]), std::signbit(x[i])) << i;
      mean += std::fabs(y[i]) / n;
    }
    EXPECT_NEAR(mean, 1.27, 4 * 0.0044) << "seed=" << seed;
  }
}

TEST(Qsgd, ScratchQueryIsEnforced) {
  const auto x = randn(4096, 8);
  std::vector<std::uint8_t> packed(mk::packed_bytes(x.size(), 6));
  float norm = 0;
  std::size_t asked = 0;
  ASSERT_EQ(cpu::qsgd_encode(nullptr, asked, x.data(), x.size(), 16, 1, &norm, packed.data()), Status::kOk);
  EXPECT_LE(asked, 2 * x.size());  // at most 2 bytes an element (the stored draws)
  if (asked == 0) GTEST_SKIP() << "this CPU's body asks for no scratch";
  std::vector<std::byte> scratch(asked);
  std::size_t fewer = asked - 1;
  EXPECT_EQ(cpu::qsgd_encode(scratch.data(), fewer, x.data(), x.size(), 16, 1, &norm, packed.data()),
            Status::kScratchTooSmall);
}

TEST(Sign, ScaleAndSigns) {
  auto x = randn(1003, 4);
  std::vector<std::uint8_t> bits((x.size() + 7) / 8);
  std::vector<float> y(x.size());
  float scale = 0;
  std::size_t b = 0;
  ASSERT_EQ(cpu::sign_encode(y.data(), b, x.data(), x.size(), &scale, bits.data()), Status::kOk);
  double l1 = 0;
  for (float v : x) l1 += std::fabs(v);
  EXPECT_NEAR(scale, l1 / x.size(), 1e-5);
  ASSERT_EQ(cpu::sign_decode(y.data(), b, bits.data(), x.size(), scale, y.data()), Status::kOk);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(std::fabs(y[i]), scale);
    EXPECT_EQ(std::signbit(y[i]), std::signbit(x[i])) << i;
  }
}

class TopK : public ::testing::TestWithParam<std::tuple<std::size_t, double>> {};

TEST_P(TopK, KeepsExactlyTheKLargest) {
  const auto [n, ratio] = GetParam();
  const std::size_t k = static_cast<std::size_t>(std::ceil(ratio * n));
  auto x = randn(n, 5);
  if (n > 100) {
    for (std::size_t i = 0; i < n; i += 7) x[i] = 0.5f;  // many ties
  }
  std::vector<std::uint32_t> idx(k);
  std::vector<float> vals(k);
  ASSERT_EQ(run_host_scratch([&](void* s, std::size_t& b) {
              return cpu::topk_select(s, b, x.data(), n, k, 9, idx.data(), vals.data());
            }),
            Status::kOk);
  std::vector<float> mags(n);
  for (std::size_t i = 0; i < n; ++i) mags[i] = std::fabs(x[i]);
  std::sort(mags.begin(), mags.end(), std::greater<>());
  std::vector<float> got(k);
  for (std::size_t j = 0; j < k; ++j) {
    ASSERT_LT(idx[j], n);
    if (j) {
      ASSERT_LT(idx[j - 1], idx[j]);
    }
    EXPECT_EQ(vals[j], x[idx[j]]);
    got[j] = std::fabs(vals[j]);
  }
  std::sort(got.begin(), got.end(), std::greater<>());
  for (std::size_t j = 0; j < k; ++j) ASSERT_EQ(got[j], mags[j]) << j;
}

INSTANTIATE_TEST_SUITE_P(Sizes, TopK,
                         ::testing::Combine(::testing::Values(1, 17, 1000, 100003),
                                            ::testing::Values(0.001, 0.01, 0.3, 1.0)));

TEST(TopK, AdversarialSampleFallsBack) {
  // All equal but a few: any threshold from the sample is the common value.
  std::vector<float> x(50000, 1.0f);
  x[123] = 5.0f;
  x[40000] = -7.0f;
  const std::size_t k = 10;
  std::vector<std::uint32_t> idx(k);
  std::vector<float> vals(k);
  ASSERT_EQ(run_host_scratch([&](void* s, std::size_t& b) {
              return cpu::topk_select(s, b, x.data(), x.size(), k, 1, idx.data(), vals.data());
            }),
            Status::kOk);
  EXPECT_EQ(idx[0], 0u);
  EXPECT_TRUE(std::find(idx.begin(), idx.end(), 123u) != idx.end());
  EXPECT_TRUE(std::find(idx.begin(), idx.end(), 40000u) != idx.end());
}

TEST(RandK, CountDistinctSortedSeeded) {
  const std::size_t n = 10000, k = 137;
  std::vector<std::uint32_t> a(k), b(k), c(k);
  ASSERT_EQ(run_host_scratch([&](void* s, std::size_t& by) { return cpu::randk_indices(s, by, n, k, 42, a.data()); }),
            Status::kOk);
  ASSERT_EQ(run_host_scratch([&](void* s, std::size_t& by) { return cpu::randk_indices(s, by, n, k, 42, b.data()); }),
            Status::kOk);
  ASSERT_EQ(run_host_scratch([&](void* s, std::size_t& by) { return cpu::randk_indices(s, by, n, k, 43, c.data()); }),
            Status::kOk);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (std::size_t j = 1; j < k; ++j) EXPECT_LT(a[j - 1], a[j]);
  EXPECT_LT(a.back(), n);
  // Uniformity: inclusion frequency of each element ~ k/n.
  std::vector<int> hits(100, 0);
  std::vector<std::uint32_t> s(10);
  for (int t = 0; t < 5000; ++t) {
    ASSERT_EQ(
        run_host_scratch([&](void* sc, std::size_t& by) { return cpu::randk_indices(sc, by, 100, 10, t, s.data()); }),
        Status::kOk);
    for (auto i : s) ++hits[i];
  }
  for (int h : hits) EXPECT_NEAR(h, 500, 100);
}

TEST(IndexCoding, VarintAndBitmapRoundTrip) {
  const std::vector<std::uint32_t> idx = {0, 1, 2, 130, 20000, 1u << 30};
  const std::size_t n = (1u << 30) + 1;
  std::vector<std::uint8_t> buf(cpu::delta_varint_bytes(idx.data(), idx.size()));
  EXPECT_EQ(buf.size(), 1u + 1 + 1 + 1 + 3 + 5);
  EXPECT_EQ(cpu::delta_varint_encode(idx.data(), idx.size(), buf.data()), buf.size());
  std::vector<std::uint32_t> back(idx.size());
  std::size_t used = 0;
  ASSERT_EQ(cpu::delta_varint_decode(buf.data(), buf.size(), idx.size(), n, back.data(), &used), Status::kOk);
  EXPECT_EQ(back, idx);
  EXPECT_EQ(used, buf.size());
  // truncated, index out of range, over-long varint
  EXPECT_EQ(cpu::delta_varint_decode(buf.data(), buf.size() - 1, idx.size(), n, back.data(), &used),
            Status::kMalformed);
  EXPECT_EQ(cpu::delta_varint_decode(buf.data(), buf.size(), idx.size(), 20001, back.data(), &used),
            Status::kMalformed);
  const std::uint8_t longv[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  EXPECT_EQ(cpu::delta_varint_decode(longv, 6, 1, n, back.data(), &used), Status::kMalformed);

  const std::vector<std::uint32_t> small = {1, 5, 8, 12};
  std::vector<std::uint8_t> bm(cpu::bitmap_bytes(13));
  cpu::bitmap_encode(small.data(), small.size(), 13, bm.data());
  std::vector<std::uint32_t> sback(4);
  ASSERT_EQ(cpu::bitmap_decode(bm.data(), 13, 4, sback.data()), Status::kOk);
  EXPECT_EQ(sback, small);
  EXPECT_EQ(cpu::bitmap_decode(bm.data(), 13, 3, sback.data()), Status::kMalformed);
  bm[1] |= 0x80;  // bit 15 >= n
  EXPECT_EQ(cpu::bitmap_decode(bm.data(), 13, 5, sback.data()), Status::kMalformed);
}

TEST(Scatter, RejectsOutOfRange) {
  const std::uint32_t idx[2] = {1, 9};
  const float vals[2] = {1, 2};
  float out[4];
  std::size_t b = 0;
  EXPECT_EQ(cpu::scatter(out, b, idx, vals, 2, out, 4), Status::kMalformed);
}

TEST(PowerSgd, RecoversExactlyLowRank) {
  const std::size_t rows = 40, cols = 30, r = 3;
  const auto a = randn(rows * r, 6), bm = randn(cols * r, 7);
  std::vector<float> m(rows * cols, 0.0f);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      for (std::size_t c = 0; c < r; ++c) m[i * cols + j] += a[i * r + c] * bm[j * r + c];
  auto q = randn(cols * r, 8);
  std::vector<float> p(rows * r), out(rows * cols);
  std::size_t b = 0;
  ASSERT_EQ(cpu::powersgd_factor(p.data(), b, m.data(), rows, cols, r, p.data(), q.data()), Status::kOk);
  ASSERT_EQ(cpu::powersgd_expand(p.data(), b, p.data(), q.data(), rows, cols, r, out.data()), Status::kOk);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < m.size(); ++i) {
    num += (out[i] - m[i]) * (out[i] - m[i]);
    den += m[i] * m[i];
  }
  EXPECT_LT(std::sqrt(num / den), 1e-4);
  // p has orthonormal columns
  for (std::size_t c = 0; c < r; ++c)
    for (std::size_t d = 0; d <= c; ++d) {
      double dot = 0;
      for (std::size_t i = 0; i < rows; ++i) dot += p[i * r + c] * p[i * r + d];
      EXPECT_NEAR(dot, c == d ? 1.0 : 0.0, 1e-5);
    }
}

TEST(Device, AvailabilityQueryDoesNotThrow) {
  const bool have = mk::cuda_device_available();
#if !defined(MURMUR_HAVE_CUDA)
  EXPECT_FALSE(have);
#endif
  (void)have;
}

}  // namespace
