// The CUDA model against the CPU model: same initial values, same loss,
// gradients and optimizer steps (to float rounding). Without a CUDA build or
// device, asking for one must fail with a runtime_error that says so; the
// comparisons are then skipped with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/layers.h"
#include "peer/model/model.h"
#include "peer/model/optimizer.h"

#if defined(MURMUR_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace mm = murmur::peer::model;

namespace {

TEST(ModelCuda, WithoutADeviceAskingForOneFailsClearly) {
  if (murmur::kernels::cuda_device_available()) GTEST_SKIP() << "a CUDA device is present";
  try {
    mm::make_model(mm::parse_model_spec("mlp", mm::Device::kCuda));
    ADD_FAILURE() << "a CUDA model was made without a device";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mm::SgdOptimizer(10, mm::Device::kCuda, {}), std::runtime_error);
}

#if defined(MURMUR_HAVE_CUDA)

std::vector<float> to_host(std::span<const float> device) {
  std::vector<float> h(device.size());
  EXPECT_EQ(cudaMemcpy(h.data(), device.data(), h.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// max |a - b| <= tol * max |b|
void expect_close(const std::vector<float>& a, std::span<const float> b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  EXPECT_LE(diff, tol * scale) << what << ": max difference " << diff << " of max " << scale;
}

class ModelCudaTwin : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!murmur::kernels::cuda_device_available()) GTEST_SKIP() << "no CUDA device visible";
  }
};

TEST_P(ModelCudaTwin, MatchesTheCpuModel) {
  const int batch = 32;
  mm::ModelSpec spec = mm::parse_model_spec(GetParam(), mm::Device::kCpu);
  spec.max_batch = batch;
  auto cpu = mm::make_model(spec);
  spec.device = mm::Device::kCuda;
  auto gpu = mm::make_model(spec);
  EXPECT_EQ(gpu->device(), mm::Device::kCuda);
  ASSERT_EQ(cpu->parameter_count(), gpu->parameter_count());
  cpu->initialize(9);
  gpu->initialize(9);
  EXPECT_EQ(to_host(gpu->parameters()), std::vector<float>(cpu->parameters().begin(), cpu->parameters().end()));

  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(std::size_t(batch) * 784);
  for (auto& v : x) v = normal(gen);
  std::vector<std::uint8_t> labels(batch);
  for (int b = 0; b < batch; ++b) labels[b] = static_cast<std::uint8_t>(b % 10);

  mm::SgdOptimizer cpu_opt(cpu->parameter_count(), mm::Device::kCpu, {});
  mm::SgdOptimizer gpu_opt(gpu->parameter_count(), mm::Device::kCuda, {});
  for (int step = 0; step < 3; ++step) {
    const mm::StepResult rc = cpu->train_batch(x.data(), labels.data(), batch);
    const mm::StepResult rg = gpu->train_batch(x.data(), labels.data(), batch);
    EXPECT_NEAR(rg.loss, rc.loss, 1e-4 * rc.loss) << "step " << step;
    EXPECT_EQ(rg.correct, rc.correct) << "step " << step;
    expect_close(to_host(gpu->gradients()), cpu->gradients(), 1e-3, "gradients");
    cpu_opt.step(cpu->parameters(), cpu->gradients(), 0.05);
    gpu_opt.step(gpu->parameters(), gpu->gradients(), 0.05);
  }
  expect_close(to_host(gpu->parameters()), cpu->parameters(), 1e-4, "parameters after three steps");
  const mm::EvalResult ec = cpu->evaluate(x.data(), labels.data(), batch);
  const mm::EvalResult eg = gpu->evaluate(x.data(), labels.data(), batch);
  EXPECT_NEAR(eg.loss_sum, ec.loss_sum, 1e-4 * ec.loss_sum);
  EXPECT_EQ(eg.correct, ec.correct);
  EXPECT_GE(gpu->buffer_bytes(), 2 * gpu->parameter_count() * sizeof(float));
}

INSTANTIATE_TEST_SUITE_P(Models, ModelCudaTwin, ::testing::Values("logreg", "mlp:16", "mlp", "cnn"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), ':', '_');
                           return n;
                         });

#endif

}  // namespace
