// CUDA twins against the CPU reference bodies. Skipped, with the reason, when
// built without CUDA or when no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/compress.h"
#include "random_vectors.h"
#include "scratch_calls.h"

#if defined(MURMUR_HAVE_CUDA)
#include <cuda_runtime.h>

#include "device_buffer.h"
#endif

namespace mk = murmur::kernels;
using mk::Status;

namespace {

#if defined(MURMUR_HAVE_CUDA)

using murmur::testing::DeviceBuffer;
using murmur::testing::randn;
using murmur::testing::run_host_scratch;

// Every random input here is drawn from N(0, 2^2), the scale these twins were
// written with (the CPU tests draw from N(0, 1)).
constexpr float kInputScale = 2.0f;

template <typename F>
Status run_device(F f) {
  std::size_t bytes = 0;
  EXPECT_EQ(f(nullptr, bytes), Status::kOk);
  DeviceBuffer<std::byte> scratch(std::max<std::size_t>(bytes, 1));
  const Status s = f(scratch.ptr, bytes);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return s;
}

class CudaTwin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mk::cuda_device_available())
      GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount failed or found none)";
  }
};

TEST_F(CudaTwin, Fp16AndBf16MatchCpu) {
  const auto x = randn(100003, 1, kInputScale);
  std::vector<std::uint16_t> h16(x.size()), hb(x.size());
  ASSERT_EQ(run_host_scratch(
                [&](void* s, std::size_t& b) { return mk::cpu::f32_to_f16(s, b, x.data(), h16.data(), x.size()); }),
            Status::kOk);
  ASSERT_EQ(run_host_scratch(
                [&](void* s, std::size_t& b) { return mk::cpu::f32_to_bf16(s, b, x.data(), hb.data(), x.size()); }),
            Status::kOk);
  DeviceBuffer<float> dx(x), dy(x.size());
  DeviceBuffer<std::uint16_t> d16(x.size()), db(x.size());
  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::f32_to_f16(s, b, dx.ptr, d16.ptr, x.size(), nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::f32_to_bf16(s, b, dx.ptr, db.ptr, x.size(), nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(d16.host(), h16);
  EXPECT_EQ(db.host(), hb);
  std::vector<float> back(x.size());
  ASSERT_EQ(run_host_scratch(
                [&](void* s, std::size_t& b) { return mk::cpu::f16_to_f32(s, b, h16.data(), back.data(), x.size()); }),
            Status::kOk);
  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::f16_to_f32(s, b, d16.ptr, dy.ptr, x.size(), nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(dy.host(), back);
  ASSERT_EQ(run_host_scratch(
                [&](void* s, std::size_t& b) { return mk::cpu::bf16_to_f32(s, b, hb.data(), back.data(), x.size()); }),
            Status::kOk);
  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::bf16_to_f32(s, b, db.ptr, dy.ptr, x.size(), nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(dy.host(), back);
}

TEST_F(CudaTwin, QsgdMatchesCpu) {
  const std::size_t n = 100001;
  const unsigned s = 16;
  const auto x = randn(n, 2, kInputScale);
  const std::size_t bytes = mk::packed_bytes(n, mk::qsgd_bits(s));
  std::vector<std::uint8_t> hp(bytes);
  float hnorm = 0;
  ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
              return mk::cpu::qsgd_encode(sc, b, x.data(), n, s, 77, &hnorm, hp.data());
            }),
            Status::kOk);
  DeviceBuffer<float> dx(x), dnorm(1), dy(n);
  DeviceBuffer<std::uint8_t> dp(bytes);
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::qsgd_encode(sc, b, dx.ptr, n, s, 77, dnorm.ptr, dp.ptr, nullptr);
            }),
            Status::kOk);
  const float gnorm = dnorm.host()[0];
  EXPECT_NEAR(gnorm, hnorm, 1e-5 * hnorm);
  // Decode both code streams on the CPU. Both follow kernels/cpu/qsgd.h with
  // the same draws, so they differ only where the norm's last bits (summed
  // in another order) moved an element across a level (rare), and then by
  // one step.
  std::vector<float> ycpu(n), ygpu(n);
  const auto gp = dp.host();
  ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
              return mk::cpu::qsgd_decode(sc, b, hp.data(), n, s, hnorm, ycpu.data());
            }),
            Status::kOk);
  ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
              return mk::cpu::qsgd_decode(sc, b, gp.data(), n, s, gnorm, ygpu.data());
            }),
            Status::kOk);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float d = std::fabs(ycpu[i] - ygpu[i]);
    differ += d > 1e-4f * hnorm;
    EXPECT_LE(d, 1.001f * hnorm / s) << i;
  }
  EXPECT_LE(differ, n / 1000);
  // The device decoder gives the CPU decoder's values for the same codes.
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::qsgd_decode(sc, b, dp.ptr, n, s, gnorm, dy.ptr, nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(dy.host(), ygpu);
}

TEST_F(CudaTwin, SignMatchesCpu) {
  const std::size_t n = 70001;
  const auto x = randn(n, 3, kInputScale);
  std::vector<std::uint8_t> hbits((n + 7) / 8);
  float hscale = 0;
  ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
              return mk::cpu::sign_encode(sc, b, x.data(), n, &hscale, hbits.data());
            }),
            Status::kOk);
  DeviceBuffer<float> dx(x), dscale(1), dy(n);
  DeviceBuffer<std::uint8_t> dbits(hbits.size());
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::sign_encode(sc, b, dx.ptr, n, dscale.ptr, dbits.ptr, nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(dbits.host(), hbits);
  EXPECT_NEAR(dscale.host()[0], hscale, 1e-6 * hscale);
  std::vector<float> y(n);
  ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
              return mk::cpu::sign_decode(sc, b, hbits.data(), n, hscale, y.data());
            }),
            Status::kOk);
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::sign_decode(sc, b, dbits.ptr, n, hscale, dy.ptr, nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(dy.host(), y);
}

TEST_F(CudaTwin, GatherScatterMatchCpu) {
  const std::size_t n = 50000, k = 500;
  const auto x = randn(n, 4, kInputScale);
  std::vector<std::uint32_t> idx(k);
  ASSERT_EQ(
      run_host_scratch([&](void* sc, std::size_t& b) { return mk::cpu::randk_indices(sc, b, n, k, 5, idx.data()); }),
      Status::kOk);
  std::vector<float> vals(k), out(n);
  ASSERT_EQ(run_host_scratch(
                [&](void* sc, std::size_t& b) { return mk::cpu::gather(sc, b, x.data(), idx.data(), k, vals.data()); }),
            Status::kOk);
  ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
              return mk::cpu::scatter(sc, b, idx.data(), vals.data(), k, out.data(), n);
            }),
            Status::kOk);
  DeviceBuffer<float> dx(x), dvals(k), dout(n);
  DeviceBuffer<std::uint32_t> didx(idx);
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::gather(sc, b, dx.ptr, didx.ptr, k, dvals.ptr, nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(dvals.host(), vals);
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::scatter(sc, b, didx.ptr, dvals.ptr, k, dout.ptr, n, nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(dout.host(), out);
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::scatter(sc, b, didx.ptr, dvals.ptr, k, dout.ptr, 100, nullptr);
            }),
            Status::kMalformed);
}

TEST_F(CudaTwin, PowerSgdMatchesCpu) {
  const std::size_t rows = 300, cols = 200, r = 4;
  const auto m = randn(rows * cols, 5, kInputScale), q0 = randn(cols * r, 6, kInputScale);
  std::vector<float> p(rows * r), q = q0, out(rows * cols);
  ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
              return mk::cpu::powersgd_factor(sc, b, m.data(), rows, cols, r, p.data(), q.data());
            }),
            Status::kOk);
  ASSERT_EQ(run_host_scratch([&](void* sc, std::size_t& b) {
              return mk::cpu::powersgd_expand(sc, b, p.data(), q.data(), rows, cols, r, out.data());
            }),
            Status::kOk);
  DeviceBuffer<float> dm(m), dp(rows * r), dq(q0), dout(rows * cols);
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::powersgd_factor(sc, b, dm.ptr, rows, cols, r, dp.ptr, dq.ptr, nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_device([&](void* sc, std::size_t& b) {
              return mk::cuda::powersgd_expand(sc, b, dp.ptr, dq.ptr, rows, cols, r, dout.ptr, nullptr);
            }),
            Status::kOk);
  const auto g = dout.host();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    num += (g[i] - out[i]) * (g[i] - out[i]);
    den += out[i] * out[i];
  }
  EXPECT_LT(std::sqrt(num / den), 1e-4);
}

// The bits of a float vector, so that NaN payloads compare equal.
std::vector<std::uint32_t> float_bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> b(v.size());
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

// Runs both top-k bodies on x and expects the same indices and values.
void expect_topk_twins(const std::vector<float>& x, std::size_t k, std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "n=" << x.size() << " k=" << k << " seed=" << seed);
  const std::size_t n = x.size();
  std::vector<std::uint32_t> hidx(k);
  std::vector<float> hvals(k);
  ASSERT_EQ(run_host_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::topk_select(s, b, x.data(), n, k, seed, hidx.data(), hvals.data());
            }),
            Status::kOk);
  DeviceBuffer<float> dx(x), dvals(k);
  DeviceBuffer<std::uint32_t> didx(k);
  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::topk_select(s, b, dx.ptr, n, k, seed, didx.ptr, dvals.ptr, nullptr);
            }),
            Status::kOk);
  EXPECT_EQ(didx.host(), hidx);
  EXPECT_EQ(float_bits(dvals.host()), float_bits(hvals));
}

TEST_F(CudaTwin, TopkMatchesCpu) {
  const auto x = randn(100003, 7, kInputScale);
  for (std::size_t k :
       {std::size_t(1), std::size_t(10), std::size_t(1000), std::size_t(10000), std::size_t(50001), x.size()})
    expect_topk_twins(x, k, 11);
  const auto big = randn((std::size_t(1) << 20) + 7, 8, kInputScale);
  expect_topk_twins(big, 1049, 12);
  expect_topk_twins(big, big.size() / 100, 13);
  expect_topk_twins({-3.5f}, 1, 1);
  const auto small = randn(65, 9, kInputScale);
  for (std::size_t k = 0; k <= small.size(); k += 8) expect_topk_twins(small, k, 2);
}

TEST_F(CudaTwin, TopkTiesMatchCpu) {
  // Few distinct magnitudes of both signs: the k-th key is shared by many
  // entries, and the lowest indices among them must win on both bodies.
  std::mt19937 gen(10);
  std::uniform_int_distribution<int> level(-3, 3);
  std::vector<float> x(200003);
  for (auto& v : x) v = 0.5f * static_cast<float>(level(gen));
  for (std::size_t k : {std::size_t(1), std::size_t(777), std::size_t(30000), std::size_t(100000), std::size_t(150001)})
    expect_topk_twins(x, k, 21);
  // All magnitudes equal, +0.0 and -0.0 the same key.
  std::vector<float> same(5000);
  for (std::size_t i = 0; i < same.size(); ++i) same[i] = (i % 3 == 0) ? -1.25f : 1.25f;
  expect_topk_twins(same, 1, 22);
  expect_topk_twins(same, 2500, 22);
  std::vector<float> zeros(4099);
  for (std::size_t i = 0; i < zeros.size(); ++i) zeros[i] = (i & 1) ? -0.0f : 0.0f;
  expect_topk_twins(zeros, 17, 23);
  // inf and NaN: NaN counts above inf, inf above any number.
  auto special = randn(30011, 24, kInputScale);
  for (std::size_t i = 0; i < special.size(); i += 97) special[i] = -INFINITY;
  for (std::size_t i = 5; i < special.size(); i += 131) special[i] = std::nanf("");
  expect_topk_twins(special, 100, 25);
  expect_topk_twins(special, 500, 25);
}

TEST_F(CudaTwin, TopkRejectsLikeCpu) {
  DeviceBuffer<float> dx(16), dvals(16);
  DeviceBuffer<std::uint32_t> didx(16);
  EXPECT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::topk_select(s, b, dx.ptr, 16, 17, 0, didx.ptr, dvals.ptr, nullptr);
            }),
            Status::kInvalidArgument);
  std::size_t bytes = 0;
  ASSERT_EQ(mk::cuda::topk_select(nullptr, bytes, dx.ptr, 16, 4, 0, didx.ptr, dvals.ptr, nullptr), Status::kOk);
  ASSERT_GT(bytes, 0u);
  DeviceBuffer<std::byte> scratch(bytes);
  std::size_t small = bytes - 1;
  EXPECT_EQ(mk::cuda::topk_select(scratch.ptr, small, dx.ptr, 16, 4, 0, didx.ptr, dvals.ptr, nullptr),
            Status::kScratchTooSmall);
}

TEST_F(CudaTwin, RandkMatchesCpu) {
  struct Case {
    std::size_t n, k;
    std::uint64_t seed;
  };
  const Case cases[] = {{1, 1, 0},
                        {64, 64, 1},
                        {65, 33, 2},
                        {1000, 0, 3},
                        {1000, 1, 4},
                        {1000, 999, 5},
                        {100003, 1000, 6},
                        {100003, 50000, 0xdeadbeefcafef00dull},
                        {(std::size_t(1) << 20) + 3, 100000, 7},
                        {5000000, 4096, 8}};
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << "n=" << c.n << " k=" << c.k << " seed=" << c.seed);
    std::vector<std::uint32_t> hidx(c.k);
    ASSERT_EQ(run_host_scratch(
                  [&](void* s, std::size_t& b) { return mk::cpu::randk_indices(s, b, c.n, c.k, c.seed, hidx.data()); }),
              Status::kOk);
    DeviceBuffer<std::uint32_t> didx(c.k);
    ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
                return mk::cuda::randk_indices(s, b, c.n, c.k, c.seed, didx.ptr, nullptr);
              }),
              Status::kOk);
    EXPECT_EQ(didx.host(), hidx);
  }
  DeviceBuffer<std::uint32_t> didx(8);
  EXPECT_EQ(
      run_device([&](void* s, std::size_t& b) { return mk::cuda::randk_indices(s, b, 7, 8, 1, didx.ptr, nullptr); }),
      Status::kInvalidArgument);
}

#else

TEST(CudaTwin, Skipped) { GTEST_SKIP() << "built without CUDA (MURMUR_HAVE_CUDA off)"; }

#endif

}  // namespace
