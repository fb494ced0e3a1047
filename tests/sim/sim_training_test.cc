// run_training: real models trained on the simulator's virtual clock. Small
// runs (4 peers, a capped shard, logistic regression) that check what the
// scheduler experiment relies on: the trainer's evaluation steps, a clock
// that holds the compute time and the links only, real learning, and
// bit-for-bit reproducibility.
#include "sim/runtime/sim_training.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "gossip/schedule/schedule_file.h"
#include "peer/data/fashion_mnist.h"

namespace murmur::sim::runtime {
namespace {

// The real dataset, loaded once; the tests skip without it.
class SimTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::filesystem::exists(peer::data::default_fashion_mnist_dir()))
      data_ = new peer::data::FashionMnist(peer::data::load_fashion_mnist(peer::data::default_fashion_mnist_dir()));
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  void SetUp() override {
    if (data_ == nullptr)
      GTEST_SKIP() << peer::data::default_fashion_mnist_dir()
                   << " is absent: install Debian's dataset-fashion-mnist package";
  }
  static const peer::data::FashionMnist& fashion_mnist() { return *data_; }
  static inline peer::data::FashionMnist* data_ = nullptr;
};

TrainingSetup small_setup() {
  TrainingSetup t;
  t.gossip.cluster.gpus = 4;
  t.gossip.cluster.gpus_per_node = 1;
  t.gossip.cluster.network = "custom";
  t.gossip.cluster.inter_node = {25e-6, 1.25e9};
  t.gossip.cluster.intra_node = t.gossip.cluster.inter_node;
  t.gossip.options.algorithm = "choco";
  t.gossip.options.compressor = "topk:0.1";
  t.gossip.options.topology = "ring";
  t.training.model = "logreg";
  t.training.train_examples = 1000;  // 16 steps of 64 per epoch, the last short
  t.training.epochs = 2;
  t.training.evals_per_epoch = 3;  // every 5 steps and at the epoch's end
  t.compute_s = 0.01;
  return t;
}

TEST_F(SimTraining, EvaluatesAtTheTrainersStepsAndLearns) {
  const auto r = run_training(small_setup(), fashion_mnist());
  EXPECT_EQ(r.steps_per_epoch, 16);
  EXPECT_EQ(r.parameters, 7850u);
  std::vector<long> steps;
  for (const auto& e : r.evals) steps.push_back(e.step);
  EXPECT_EQ(steps, (std::vector<long>{5, 10, 15, 16, 21, 26, 31, 32}));
  double previous = 0;
  for (const auto& e : r.evals) {
    // Each step costs at least its compute on the virtual clock; the links
    // (40 KB at 1.25 GB/s) add little.
    EXPECT_GE(e.time_s, e.step * 0.01 - 1e-9) << "step " << e.step;
    EXPECT_LT(e.time_s, e.step * 0.011) << "step " << e.step;
    EXPECT_GT(e.time_s, previous);
    previous = e.time_s;
  }
  EXPECT_GT(r.evals.back().test_accuracy, 0.6);  // ten classes: chance is 0.1
  EXPECT_LT(r.evals.front().test_accuracy, r.evals.back().test_accuracy);
  const auto first = r.first_at(0.5);
  ASSERT_TRUE(first.has_value());
  for (const auto& e : r.evals) {
    if (e.step == first->step) break;
    EXPECT_LT(e.test_accuracy, 0.5) << "step " << e.step << " is earlier";
  }
}

// Bit for bit, with the adaptive schedule too (its decisions come from
// virtual times, none from the host's clock).
TEST_F(SimTraining, SameSetupSameEvaluations) {
  auto adaptive = small_setup();
  adaptive.gossip.options.compressor = "topk:1";
  adaptive.gossip.options.schedule = "adaptive";
  adaptive.gossip.cluster.episodes.push_back({0, 1, 0.05, 0.2, {25e-6, 125e3}});
  int decisions = 0;
  adaptive.gossip.on_decision = [&](int, double, const nlohmann::json&) { ++decisions; };
  const auto a = run_training(adaptive, fashion_mnist());
  const int decisions_a = decisions;
  const auto b = run_training(adaptive, fashion_mnist());
  EXPECT_GT(decisions_a, 0);
  EXPECT_EQ(decisions, 2 * decisions_a);
  ASSERT_EQ(a.evals.size(), b.evals.size());
  for (std::size_t i = 0; i < a.evals.size(); ++i) {
    EXPECT_EQ(a.evals[i].time_s, b.evals[i].time_s);
    EXPECT_EQ(a.evals[i].test_accuracy, b.evals[i].test_accuracy);
    EXPECT_EQ(a.evals[i].test_loss, b.evals[i].test_loss);
  }
}

// A slower link shows in the clock, not in what is learned per step.
TEST_F(SimTraining, ASlowLinkCostsTimeNotSteps) {
  auto slow = small_setup();
  slow.gossip.cluster.episodes.push_back({0, 1, 0.0, 100.0, {25e-6, 125e3}});  // 1 Mbit/s: 38 ms a message
  const auto fast = run_training(small_setup(), fashion_mnist());
  const auto r = run_training(slow, fashion_mnist());
  ASSERT_EQ(r.evals.size(), fast.evals.size());
  EXPECT_GT(r.evals.back().time_s, fast.evals.back().time_s);
  EXPECT_EQ(r.evals.back().test_accuracy, fast.evals.back().test_accuracy);
}

TEST_F(SimTraining, RefusesAnEvalRankOutsideTheCluster) {
  auto t = small_setup();
  t.eval_rank = 4;
  try {
    run_training(t, fashion_mnist());
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("eval_rank 4 is not a rank of 4"), std::string::npos) << e.what();
  }
  t = small_setup();
  t.training.model = "resnet";
  EXPECT_THROW(run_training(t, fashion_mnist()), std::exception);
}

}  // namespace
}  // namespace murmur::sim::runtime
