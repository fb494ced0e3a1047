// CUDA layer kernels against the CPU reference bodies. Skipped, with the
// reason, when built without CUDA or when no GPU is visible.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/layers.h"
#include "kernels/sgd.h"
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
using murmur::testing::run_no_scratch;

template <typename F>
Status run_device(F f) {
  const Status s = run_no_scratch(f);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return s;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << "element " << i;
}

class LayersCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mk::cuda_device_available())
      GTEST_SKIP() << "no CUDA device visible (cudaGetDeviceCount failed or found none)";
  }
};

TEST_F(LayersCuda, BiasAndReluMatchCpu) {
  const std::size_t rows = 3001, cols = 37, n = rows * cols;
  auto y = randn(n, 1), bias = randn(cols, 2), dy = randn(n, 3);
  DeviceBuffer<float> dy_dev(dy), y_dev(y), bias_dev(bias), db_dev(cols), out_dev(n);

  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::bias_add(s, b, y_dev.ptr, bias_dev.ptr, rows, cols, nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch(
                [&](void* s, std::size_t& b) { return mk::cpu::bias_add(s, b, y.data(), bias.data(), rows, cols); }),
            Status::kOk);
  expect_near(y_dev.host(), y, 1e-6f);

  std::vector<float> db(cols);
  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::bias_grad(s, b, dy_dev.ptr, rows, cols, db_dev.ptr, nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch(
                [&](void* s, std::size_t& b) { return mk::cpu::bias_grad(s, b, dy.data(), rows, cols, db.data()); }),
            Status::kOk);
  expect_near(db_dev.host(), db, 5e-3f);  // sums of 3001 normals, in different orders

  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::relu_forward(s, b, y_dev.ptr, out_dev.ptr, n, nullptr);
            }),
            Status::kOk);
  std::vector<float> out(n);
  ASSERT_EQ(
      run_no_scratch([&](void* s, std::size_t& b) { return mk::cpu::relu_forward(s, b, y.data(), out.data(), n); }),
      Status::kOk);
  expect_near(out_dev.host(), out, 0.0f);

  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::relu_backward(s, b, out_dev.ptr, dy_dev.ptr, dy_dev.ptr, n, nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::relu_backward(s, b, out.data(), dy.data(), dy.data(), n);
            }),
            Status::kOk);
  expect_near(dy_dev.host(), dy, 0.0f);
}

TEST_F(LayersCuda, Im2colAndCol2imMatchCpu) {
  const std::size_t images = 3, rows = 14, cols = 13, channels = 16;
  const std::size_t pixels = images * rows * cols, row_len = 9 * channels;
  const auto image = randn(images * rows * cols * channels, 4), d = randn(pixels * row_len, 5);
  DeviceBuffer<float> image_dev(image), cols_dev(pixels * row_len), d_dev(d), back_dev(image.size());
  std::vector<float> columns(pixels * row_len), back(image.size());

  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::im2col3x3(s, b, image_dev.ptr, images, rows, cols, channels, cols_dev.ptr, nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::im2col3x3(s, b, image.data(), images, rows, cols, channels, columns.data());
            }),
            Status::kOk);
  expect_near(cols_dev.host(), columns, 0.0f);

  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::col2im3x3(s, b, d_dev.ptr, images, rows, cols, channels, back_dev.ptr, nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::col2im3x3(s, b, d.data(), images, rows, cols, channels, back.data());
            }),
            Status::kOk);
  expect_near(back_dev.host(), back, 1e-5f);
}

TEST_F(LayersCuda, MaxPoolMatchesCpu) {
  const std::size_t images = 4, rows = 15, cols = 28, channels = 32;  // an odd row count
  const std::size_t x_count = images * rows * cols * channels, y_count = images * (rows / 2) * (cols / 2) * channels;
  const auto x = randn(x_count, 6), dy = randn(y_count, 7);
  DeviceBuffer<float> x_dev(x), y_dev(y_count), dy_dev(dy), dx_dev(x_count);
  DeviceBuffer<std::uint32_t> idx_dev(y_count);
  std::vector<float> y(y_count), dx(x_count);
  std::vector<std::uint32_t> idx(y_count);

  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::maxpool2_forward(s, b, x_dev.ptr, images, rows, cols, channels, y_dev.ptr, idx_dev.ptr,
                                                nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::maxpool2_forward(s, b, x.data(), images, rows, cols, channels, y.data(), idx.data());
            }),
            Status::kOk);
  expect_near(y_dev.host(), y, 0.0f);
  EXPECT_EQ(idx_dev.host(), idx);

  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::maxpool2_backward(s, b, dy_dev.ptr, idx_dev.ptr, y_count, dx_dev.ptr, x_count, nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::maxpool2_backward(s, b, dy.data(), idx.data(), y_count, dx.data(), x_count);
            }),
            Status::kOk);
  expect_near(dx_dev.host(), dx, 0.0f);
}

TEST_F(LayersCuda, SoftmaxCrossEntropyMatchesCpu) {
  const std::size_t batch = 300, classes = 10;
  auto z = randn(batch * classes, 8, 4.0f);
  z[0] += 1e4f;  // one huge row: stable on both
  std::vector<std::uint8_t> labels(batch);
  for (std::size_t b = 0; b < batch; ++b) labels[b] = static_cast<std::uint8_t>((b * 3) % classes);
  DeviceBuffer<float> z_dev(z), g_dev(z.size());
  DeviceBuffer<std::uint8_t> labels_dev(labels);
  DeviceBuffer<double> loss_dev(1);
  DeviceBuffer<int> correct_dev(1);
  std::vector<float> g(z.size());
  double loss = 0;
  int correct = 0;
  const float scale = 1.0f / batch;

  ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
              return mk::cuda::softmax_xent(s, b, z_dev.ptr, labels_dev.ptr, batch, classes, scale, g_dev.ptr,
                                            loss_dev.ptr, correct_dev.ptr, nullptr);
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::softmax_xent(s, b, z.data(), labels.data(), batch, classes, scale, g.data(), &loss,
                                           &correct);
            }),
            Status::kOk);
  EXPECT_NEAR(loss_dev.host()[0], loss, 1e-9 * loss + 1e-9);
  EXPECT_EQ(correct_dev.host()[0], correct);
  expect_near(g_dev.host(), g, 1e-7f);
}

TEST_F(LayersCuda, SgdMomentumMatchesCpu) {
  const std::size_t n = 100003;
  for (bool nesterov : {false, true}) {
    auto w = randn(n, 9), v = randn(n, 10);
    const auto g = randn(n, 11);
    DeviceBuffer<float> w_dev(w), v_dev(v), g_dev(g);
    ASSERT_EQ(run_device([&](void* s, std::size_t& b) {
                return mk::cuda::sgd_momentum(s, b, w_dev.ptr, g_dev.ptr, v_dev.ptr, n, 0.05f, 0.9f, 5e-4f, nesterov,
                                              nullptr);
              }),
              Status::kOk);
    ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
                return mk::cpu::sgd_momentum(s, b, w.data(), g.data(), v.data(), n, 0.05f, 0.9f, 5e-4f, nesterov);
              }),
              Status::kOk);
    expect_near(w_dev.host(), w, 1e-5f);
    expect_near(v_dev.host(), v, 1e-5f);
  }
}

#else

TEST(LayersCuda, NotBuilt) { GTEST_SKIP() << "built without CUDA (MURMUR_CUDA=OFF or no toolkit)"; }

#endif

}  // namespace
