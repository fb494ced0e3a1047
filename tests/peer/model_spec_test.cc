// Model names, shapes, parameter counts, initialization and misuse.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"
#include "peer/model/model.h"

namespace mm = murmur::peer::model;

namespace {

std::size_t count_of(const std::string& name) {
  return mm::make_model(mm::parse_model_spec(name, mm::Device::kCpu))->parameter_count();
}

TEST(ModelSpec, ParsesTheAcceptedNames) {
  for (const char* name : {"mlp", "mlp:16", "mlp:300,100,50", "cnn", "logreg"}) {
    const mm::ModelSpec s = mm::parse_model_spec(name, mm::Device::kCuda);
    EXPECT_EQ(s.name, name);
    EXPECT_EQ(s.device, mm::Device::kCuda);
    EXPECT_EQ(s.input_rows * s.input_cols * s.input_channels, 784);
    EXPECT_EQ(s.classes, 10);
  }
}

TEST(ModelSpec, RefusesBadNamesNamingThem) {
  for (const char* name :
       {"", "resnet", "mlp:", "mlp:0", "mlp:16,", "mlp:a", "mlp:16,-3", "mlp:1e3", "MLP", "cnn:8", "mlp:99999999999"}) {
    try {
      mm::parse_model_spec(name, mm::Device::kCpu);
      ADD_FAILURE() << "accepted '" << name << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + name + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("accepted"), std::string::npos) << e.what();
    }
  }
}

TEST(ModelSpec, ParameterCountsFollowTheArchitectures) {
  EXPECT_EQ(count_of("logreg"), 784u * 10 + 10);
  EXPECT_EQ(count_of("mlp"), 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  EXPECT_EQ(count_of("mlp:32,16"), 784u * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10);
  // conv 1->16, conv 16->32 (3x3 taps each), dense 7*7*32 -> 128 -> 10.
  EXPECT_EQ(count_of("cnn"), (9u * 16 + 16) + (9u * 16 * 32 + 32) + (7u * 7 * 32 * 128 + 128) + (128u * 10 + 10));
}

TEST(ModelSpec, MakeModelRefusesImpossibleShapes) {
  mm::ModelSpec s = mm::parse_model_spec("cnn", mm::Device::kCpu);
  s.input_rows = 3;
  EXPECT_THROW(mm::make_model(s), std::invalid_argument);
  s = mm::parse_model_spec("mlp", mm::Device::kCpu);
  s.classes = 1;
  EXPECT_THROW(mm::make_model(s), std::invalid_argument);
  s.classes = 300;
  EXPECT_THROW(mm::make_model(s), std::invalid_argument);
  s = mm::parse_model_spec("mlp", mm::Device::kCpu);
  s.max_batch = 0;
  EXPECT_THROW(mm::make_model(s), std::invalid_argument);
  s = mm::parse_model_spec("mlp", mm::Device::kCpu);
  s.name = "mlp:x";
  EXPECT_THROW(mm::make_model(s), std::invalid_argument);
}

TEST(Model, InitializationIsDeterministicAndHeScaled) {
  auto a = mm::make_model(mm::parse_model_spec("mlp:32", mm::Device::kCpu));
  auto b = mm::make_model(mm::parse_model_spec("mlp:32", mm::Device::kCpu));
  a->initialize(5);
  b->initialize(5);
  const auto pa = a->parameters(), pb = b->parameters();
  EXPECT_TRUE(std::equal(pa.begin(), pa.end(), pb.begin()));
  b->initialize(6);
  EXPECT_FALSE(std::equal(pa.begin(), pa.end(), pb.begin()));

  // W1 32x784 in +-sqrt(6/784), b1 zero; W2 10x32 in +-sqrt(3/32), b2 zero.
  const float bound1 = std::sqrt(6.0f / 784), bound2 = std::sqrt(3.0f / 32);
  double max1 = 0, sum_sq = 0;
  for (std::size_t i = 0; i < 32 * 784; ++i) {
    max1 = std::max(max1, double(std::abs(pa[i])));
    sum_sq += double(pa[i]) * pa[i];
  }
  EXPECT_LE(max1, bound1);
  EXPECT_GT(max1, 0.95 * bound1);
  EXPECT_NEAR(sum_sq / (32 * 784), bound1 * bound1 / 3, 0.05 * bound1 * bound1);  // uniform: bound^2 / 3
  for (std::size_t i = 32 * 784; i < 32 * 784 + 32; ++i) EXPECT_EQ(pa[i], 0.0f);
  for (std::size_t i = 32 * 784 + 32; i < 32 * 784 + 32 + 320; ++i) EXPECT_LE(std::abs(pa[i]), bound2);
  for (std::size_t i = 32 * 784 + 32 + 320; i < pa.size(); ++i) EXPECT_EQ(pa[i], 0.0f);
}

TEST(Model, BatchesAndLabelsAreChecked) {
  mm::ModelSpec s = mm::parse_model_spec("logreg", mm::Device::kCpu);
  s.max_batch = 4;
  auto m = mm::make_model(s);
  m->initialize(1);
  std::vector<float> x(5 * 784, 0.5f);
  std::vector<std::uint8_t> labels{1, 2, 3, 4, 5};
  EXPECT_THROW(m->train_batch(x.data(), labels.data(), 5), murmur::InvariantError);
  EXPECT_THROW(m->train_batch(x.data(), labels.data(), 0), murmur::InvariantError);
  EXPECT_NO_THROW(m->train_batch(x.data(), labels.data(), 4));
  labels[2] = 10;
  try {
    m->evaluate(x.data(), labels.data(), 4);
    ADD_FAILURE() << "label 10 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("label 10 at batch position 2"), std::string::npos) << e.what();
  }
}

TEST(Model, EvaluateLeavesGradientsAloneAndAgreesWithTraining) {
  mm::ModelSpec s = mm::parse_model_spec("cnn", mm::Device::kCpu);
  s.max_batch = 3;
  auto m = mm::make_model(s);
  m->initialize(3);
  std::vector<float> x(3 * 784);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * double(i));
  const std::vector<std::uint8_t> labels{0, 4, 9};
  const mm::StepResult r = m->train_batch(x.data(), labels.data(), 3);
  const std::vector<float> g(m->gradients().begin(), m->gradients().end());
  const mm::EvalResult e = m->evaluate(x.data(), labels.data(), 3);
  EXPECT_TRUE(std::equal(g.begin(), g.end(), m->gradients().begin()));
  EXPECT_EQ(e.count, 3);
  EXPECT_EQ(e.correct, r.correct);
  EXPECT_NEAR(e.loss_sum / 3, r.loss, 1e-9);
  EXPECT_GT(r.loss, 0.0);
  // A smaller batch after a larger one uses only its own rows.
  const mm::EvalResult first = m->evaluate(x.data(), labels.data(), 1);
  EXPECT_EQ(first.count, 1);
  EXPECT_LT(first.loss_sum, e.loss_sum);
}

TEST(Model, BufferBytesCoverParametersGradientsAndActivations) {
  for (const char* name : {"logreg", "mlp", "cnn"}) {
    mm::ModelSpec s = mm::parse_model_spec(name, mm::Device::kCpu);
    s.max_batch = 8;
    const auto small = mm::make_model(s);
    s.max_batch = 64;
    const auto large = mm::make_model(s);
    EXPECT_GE(small->buffer_bytes(), 2 * small->parameter_count() * sizeof(float)) << name;
    EXPECT_GT(large->buffer_bytes(), small->buffer_bytes()) << name;
    EXPECT_EQ(small->name(), name);
    EXPECT_EQ(small->device(), mm::Device::kCpu);
  }
}

}  // namespace
