// The CPU layer kernels against naive loops written from their definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/layers.h"
#include "kernels/sgd.h"
#include "random_vectors.h"
#include "scratch_calls.h"

namespace mk = murmur::kernels;
using mk::Status;
using murmur::testing::randn;
using murmur::testing::run_no_scratch;

namespace {

struct Dims {
  std::size_t n, rows, cols, channels;
  std::size_t at(std::size_t b, std::size_t y, std::size_t x, std::size_t c) const {
    return ((b * rows + y) * cols + x) * channels + c;
  }
  std::size_t size() const { return n * rows * cols * channels; }
};

TEST(LayersCpu, BiasAddAndGrad) {
  const std::size_t rows = 37, cols = 19;
  auto y = randn(rows * cols, 1), bias = randn(cols, 2);
  const auto y0 = y;
  ASSERT_EQ(run_no_scratch(
                [&](void* s, std::size_t& b) { return mk::cpu::bias_add(s, b, y.data(), bias.data(), rows, cols); }),
            Status::kOk);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) EXPECT_FLOAT_EQ(y[r * cols + c], y0[r * cols + c] + bias[c]);

  std::vector<float> db(cols, 99.0f);
  ASSERT_EQ(run_no_scratch(
                [&](void* s, std::size_t& b) { return mk::cpu::bias_grad(s, b, y0.data(), rows, cols, db.data()); }),
            Status::kOk);
  for (std::size_t c = 0; c < cols; ++c) {
    double sum = 0;
    for (std::size_t r = 0; r < rows; ++r) sum += y0[r * cols + c];
    EXPECT_NEAR(db[c], sum, 1e-4);
  }
}

TEST(LayersCpu, ReluForwardAndBackwardInPlace) {
  const std::size_t n = 1001;
  const auto x = randn(n, 3), dy = randn(n, 4);
  auto y = x;
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) { return mk::cpu::relu_forward(s, b, y.data(), y.data(), n); }),
            Status::kOk);
  auto dx = dy;
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::relu_backward(s, b, y.data(), dx.data(), dx.data(), n);
            }),
            Status::kOk);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);
    EXPECT_EQ(dx[i], x[i] > 0 ? dy[i] : 0.0f);
  }
}

// Convolution by im2col + a naive GEMM against direct loops, forward and
// for the input gradient (col2im of dout W).
TEST(LayersCpu, Im2colConvolutionMatchesDirectLoops) {
  const Dims in{2, 5, 6, 3};
  const std::size_t filters = 4, taps = 9 * in.channels, pixels = in.n * in.rows * in.cols;
  const auto image = randn(in.size(), 5), w = randn(filters * taps, 6);

  std::vector<float> columns(pixels * taps, -1.0f);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::im2col3x3(s, b, image.data(), in.n, in.rows, in.cols, in.channels, columns.data());
            }),
            Status::kOk);
  auto tap_weight = [&](std::size_t f, int ky, int kx, std::size_t c) {
    return w[f * taps + std::size_t((ky + 1) * 3 + (kx + 1)) * in.channels + c];
  };
  for (std::size_t b = 0; b < in.n; ++b)
    for (std::size_t y = 0; y < in.rows; ++y)
      for (std::size_t x = 0; x < in.cols; ++x)
        for (std::size_t f = 0; f < filters; ++f) {
          double direct = 0;
          for (int ky = -1; ky <= 1; ++ky)
            for (int kx = -1; kx <= 1; ++kx) {
              const long sy = long(y) + ky, sx = long(x) + kx;
              if (sy < 0 || sx < 0 || sy >= long(in.rows) || sx >= long(in.cols)) continue;
              for (std::size_t c = 0; c < in.channels; ++c)
                direct += double(tap_weight(f, ky, kx, c)) * image[in.at(b, sy, sx, c)];
            }
          const std::size_t p = (b * in.rows + y) * in.cols + x;
          double gemm = 0;
          for (std::size_t t = 0; t < taps; ++t) gemm += double(columns[p * taps + t]) * w[f * taps + t];
          EXPECT_NEAR(gemm, direct, 1e-4) << "pixel " << p << " filter " << f;
        }

  // Input gradient: din = col2im(dout W) against the direct adjoint loops.
  const auto dout = randn(pixels * filters, 7);
  std::vector<float> dcols(pixels * taps);
  for (std::size_t p = 0; p < pixels; ++p)
    for (std::size_t t = 0; t < taps; ++t) {
      double acc = 0;
      for (std::size_t f = 0; f < filters; ++f) acc += double(dout[p * filters + f]) * w[f * taps + t];
      dcols[p * taps + t] = static_cast<float>(acc);
    }
  std::vector<float> din(in.size(), -1.0f);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::col2im3x3(s, b, dcols.data(), in.n, in.rows, in.cols, in.channels, din.data());
            }),
            Status::kOk);
  for (std::size_t b = 0; b < in.n; ++b)
    for (std::size_t sy = 0; sy < in.rows; ++sy)
      for (std::size_t sx = 0; sx < in.cols; ++sx)
        for (std::size_t c = 0; c < in.channels; ++c) {
          double direct = 0;  // every output pixel (y, x) whose window covers (sy, sx)
          for (int ky = -1; ky <= 1; ++ky)
            for (int kx = -1; kx <= 1; ++kx) {
              const long y = long(sy) - ky, x = long(sx) - kx;
              if (y < 0 || x < 0 || y >= long(in.rows) || x >= long(in.cols)) continue;
              const std::size_t p = (b * in.rows + y) * in.cols + x;
              for (std::size_t f = 0; f < filters; ++f)
                direct += double(dout[p * filters + f]) * tap_weight(f, ky, kx, c);
            }
          EXPECT_NEAR(din[in.at(b, sy, sx, c)], direct, 1e-4);
        }
}

// col2im is im2col's adjoint: <im2col(x), d> == <x, col2im(d)>.
TEST(LayersCpu, Col2imIsTheAdjointOfIm2col) {
  const Dims in{3, 7, 4, 1};
  const std::size_t row_len = 9 * in.channels, pixels = in.n * in.rows * in.cols;
  const auto x = randn(in.size(), 8), d = randn(pixels * row_len, 9);
  std::vector<float> cols(pixels * row_len), back(in.size());
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::im2col3x3(s, b, x.data(), in.n, in.rows, in.cols, in.channels, cols.data());
            }),
            Status::kOk);
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::col2im3x3(s, b, d.data(), in.n, in.rows, in.cols, in.channels, back.data());
            }),
            Status::kOk);
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < cols.size(); ++i) lhs += double(cols[i]) * d[i];
  for (std::size_t i = 0; i < x.size(); ++i) rhs += double(x[i]) * back[i];
  EXPECT_NEAR(lhs, rhs, 1e-3 * std::abs(lhs) + 1e-3);
}

TEST(LayersCpu, MaxPoolForwardAndBackwardMatchNaive) {
  const Dims in{2, 5, 7, 3};  // odd sizes: the last row and column are dropped
  const Dims out{2, 2, 3, 3};
  auto x = randn(in.size(), 10);
  // A tie in the first window of channel 0: the first in window order wins.
  x[in.at(0, 0, 1, 0)] = x[in.at(0, 1, 0, 0)] = 100.0f;
  std::vector<float> y(out.size());
  std::vector<std::uint32_t> argmax(out.size());
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::maxpool2_forward(s, b, x.data(), in.n, in.rows, in.cols, in.channels, y.data(),
                                               argmax.data());
            }),
            Status::kOk);
  for (std::size_t b = 0; b < out.n; ++b)
    for (std::size_t oy = 0; oy < out.rows; ++oy)
      for (std::size_t ox = 0; ox < out.cols; ++ox)
        for (std::size_t c = 0; c < out.channels; ++c) {
          std::size_t best = in.at(b, 2 * oy, 2 * ox, c);
          for (std::size_t dy = 0; dy < 2; ++dy)
            for (std::size_t dx = 0; dx < 2; ++dx)
              if (x[in.at(b, 2 * oy + dy, 2 * ox + dx, c)] > x[best]) best = in.at(b, 2 * oy + dy, 2 * ox + dx, c);
          const std::size_t i = out.at(b, oy, ox, c);
          EXPECT_EQ(y[i], x[best]);
          EXPECT_EQ(argmax[i], best);
        }
  EXPECT_EQ(argmax[out.at(0, 0, 0, 0)], in.at(0, 0, 1, 0));

  const auto dy = randn(out.size(), 11);
  std::vector<float> dx(in.size(), 7.0f), expected(in.size(), 0.0f);
  for (std::size_t i = 0; i < out.size(); ++i) expected[argmax[i]] = dy[i];
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::maxpool2_backward(s, b, dy.data(), argmax.data(), out.size(), dx.data(), in.size());
            }),
            Status::kOk);
  EXPECT_EQ(dx, expected);
  argmax[0] = static_cast<std::uint32_t>(in.size());
  EXPECT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::maxpool2_backward(s, b, dy.data(), argmax.data(), out.size(), dx.data(), in.size());
            }),
            Status::kInvalidArgument);
}

struct XentReference {
  double loss = 0;
  int correct = 0;
  std::vector<double> grad;
};

XentReference naive_xent(const std::vector<float>& z, const std::vector<std::uint8_t>& labels, std::size_t k,
                         double scale) {
  XentReference r;
  r.grad.resize(z.size());
  for (std::size_t b = 0; b < labels.size(); ++b) {
    double sum = 0;
    std::size_t best = 0;
    for (std::size_t j = 0; j < k; ++j) {
      sum += std::exp(double(z[b * k + j]));
      if (z[b * k + j] > z[b * k + best]) best = j;
    }
    r.loss += std::log(sum) - z[b * k + labels[b]];
    r.correct += best == labels[b];
    for (std::size_t j = 0; j < k; ++j)
      r.grad[b * k + j] = scale * (std::exp(double(z[b * k + j])) / sum - (j == labels[b] ? 1.0 : 0.0));
  }
  return r;
}

TEST(LayersCpu, SoftmaxCrossEntropyMatchesNaiveAndIsStable) {
  const std::size_t batch = 9, k = 10;
  const auto z = randn(batch * k, 12, 3.0f);
  std::vector<std::uint8_t> labels(batch);
  for (std::size_t b = 0; b < batch; ++b) labels[b] = static_cast<std::uint8_t>((b * 7) % k);
  const float scale = 1.0f / batch;
  const XentReference ref = naive_xent(z, labels, k, scale);

  std::vector<float> grad(z.size());
  double loss = -1;
  int correct = -1;
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::softmax_xent(s, b, z.data(), labels.data(), batch, k, scale, grad.data(), &loss,
                                           &correct);
            }),
            Status::kOk);
  EXPECT_NEAR(loss, ref.loss, 1e-5);
  EXPECT_EQ(correct, ref.correct);
  for (std::size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(grad[i], ref.grad[i], 1e-6);

  // Shifting every logit by 1e4 would overflow a naive exp; the result must
  // not change (up to the rounding of the shifted floats).
  auto shifted = z;
  for (auto& v : shifted) v += 1e4f;
  std::vector<float> grad2(z.size());
  double loss2 = -1;
  int correct2 = -1;
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::softmax_xent(s, b, shifted.data(), labels.data(), batch, k, scale, grad2.data(), &loss2,
                                           &correct2);
            }),
            Status::kOk);
  EXPECT_TRUE(std::isfinite(loss2));
  EXPECT_NEAR(loss2, ref.loss, 0.05);  // floats near 1e4 carry ~1e-3 of absolute rounding
  EXPECT_EQ(correct2, ref.correct);
  for (std::size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(grad2[i], ref.grad[i], 1e-3);

  // Forward only, and a label out of range.
  ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::softmax_xent(s, b, z.data(), labels.data(), batch, k, 0.0f, nullptr, &loss, &correct);
            }),
            Status::kOk);
  EXPECT_NEAR(loss, ref.loss, 1e-5);
  labels[3] = static_cast<std::uint8_t>(k);
  EXPECT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
              return mk::cpu::softmax_xent(s, b, z.data(), labels.data(), batch, k, scale, grad.data(), &loss,
                                           &correct);
            }),
            Status::kInvalidArgument);
}

TEST(LayersCpu, SgdMomentumMatchesTheFormula) {
  const std::size_t n = 77;
  for (bool nesterov : {false, true}) {
    auto w = randn(n, 13), v = randn(n, 14);
    const auto g = randn(n, 15), w0 = w, v0 = v;
    const float lr = 0.05f, mu = 0.9f, wd = 0.01f;
    ASSERT_EQ(run_no_scratch([&](void* s, std::size_t& b) {
                return mk::cpu::sgd_momentum(s, b, w.data(), g.data(), v.data(), n, lr, mu, wd, nesterov);
              }),
              Status::kOk);
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = double(g[i]) + wd * double(w0[i]);
      const double vi = mu * double(v0[i]) + gi;
      EXPECT_NEAR(v[i], vi, 1e-6);
      EXPECT_NEAR(w[i], double(w0[i]) - lr * (nesterov ? gi + mu * vi : vi), 1e-6);
    }
  }
}

}  // namespace
