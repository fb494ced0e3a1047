// SgdOptimizer against values computed by hand.
#include <gtest/gtest.h>

#include <vector>

#include "common/check.h"
#include "peer/model/optimizer.h"

namespace mm = murmur::peer::model;

namespace {

TEST(SgdOptimizer, MomentumAndWeightDecayByHand) {
  mm::SgdOptimizer opt(2, mm::Device::kCpu, {.momentum = 0.9, .weight_decay = 0.1, .nesterov = false});
  std::vector<float> w{1.0f, -2.0f};
  const std::vector<float> g{0.5f, 0.25f};
  // Step 1: g' = g + 0.1 w = {0.6, 0.05}; v = g'; w -= 0.1 v.
  opt.step(w, g, 0.1);
  EXPECT_NEAR(w[0], 0.94, 1e-6);
  EXPECT_NEAR(w[1], -2.005, 1e-6);
  EXPECT_NEAR(opt.momentum()[0], 0.6, 1e-6);
  EXPECT_NEAR(opt.momentum()[1], 0.05, 1e-6);
  // Step 2: g' = {0.5 + 0.094, 0.25 - 0.2005} = {0.594, 0.0495};
  // v = 0.9 {0.6, 0.05} + g' = {1.134, 0.0945}; w -= 0.1 v.
  opt.step(w, g, 0.1);
  EXPECT_NEAR(opt.momentum()[0], 1.134, 1e-6);
  EXPECT_NEAR(opt.momentum()[1], 0.0945, 1e-6);
  EXPECT_NEAR(w[0], 0.8266, 1e-6);
  EXPECT_NEAR(w[1], -2.01445, 1e-6);
}

TEST(SgdOptimizer, NesterovByHand) {
  mm::SgdOptimizer opt(1, mm::Device::kCpu, {.momentum = 0.9, .weight_decay = 0.1, .nesterov = true});
  std::vector<float> w{1.0f};
  const std::vector<float> g{0.5f};
  // g' = 0.6, v = 0.6, w -= 0.1 (g' + 0.9 v) = 0.1 * 1.14.
  opt.step(w, g, 0.1);
  EXPECT_NEAR(w[0], 0.886, 1e-6);
  // g' = 0.5 + 0.0886 = 0.5886, v = 0.54 + 0.5886 = 1.1286,
  // w -= 0.1 (0.5886 + 1.01574) = 0.160434.
  opt.step(w, g, 0.1);
  EXPECT_NEAR(opt.momentum()[0], 1.1286, 1e-6);
  EXPECT_NEAR(w[0], 0.886 - 0.160434, 1e-6);
}

TEST(SgdOptimizer, PlainSgdWithoutMomentumOrDecay) {
  mm::SgdOptimizer opt(3, mm::Device::kCpu, {.momentum = 0, .weight_decay = 0, .nesterov = false});
  std::vector<float> w{1, 2, 3};
  opt.step(w, std::vector<float>{1, -1, 0.5f}, 0.5);
  EXPECT_EQ(w, (std::vector<float>{0.5f, 2.5f, 2.75f}));
}

TEST(SgdOptimizer, SizeMismatchIsABug) {
  mm::SgdOptimizer opt(3, mm::Device::kCpu, {});
  std::vector<float> w(2), g(3);
  EXPECT_THROW(opt.step(w, g, 0.1), murmur::InvariantError);
  EXPECT_EQ(opt.momentum().size(), 3u);
}

}  // namespace
