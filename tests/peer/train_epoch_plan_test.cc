// epoch_plan: the steps per epoch and evaluation steps that murmur-peer's
// trainer and the simulator's share.
#include "peer/train/epoch_plan.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace murmur::peer::train {
namespace {

std::vector<long> evaluation_steps(long steps, int evals) {
  std::vector<long> at;
  for (long s = 1; s <= steps; ++s)
    if (is_evaluation_step(s, steps, evals)) at.push_back(s);
  return at;
}

TEST(EpochPlan, StepsPerEpochIsTheMeanShardInBatches) {
  EXPECT_EQ(steps_per_epoch(60000, 8, 0, 64), 118);       // 7500 / 64, the last batch short
  EXPECT_EQ(steps_per_epoch(60000, 8, 1000, 64), 16);     // capped shard
  EXPECT_EQ(steps_per_epoch(60000, 8, 100000, 64), 118);  // a cap above the shard changes nothing
  EXPECT_EQ(steps_per_epoch(64, 1, 0, 64), 1);
}

TEST(EpochPlan, EvaluationsInsideTheEpochAndAtItsEnd) {
  EXPECT_EQ(evaluation_steps(16, 1), (std::vector<long>{16}));
  EXPECT_EQ(evaluation_steps(16, 4), (std::vector<long>{4, 8, 12, 16}));
  EXPECT_EQ(evaluation_steps(16, 3), (std::vector<long>{5, 10, 15, 16}));  // 16 / 3 = 5
  EXPECT_EQ(evaluation_steps(3, 8), (std::vector<long>{1, 2, 3}));         // at most every step
  EXPECT_EQ(evaluation_steps(118, 16).size(), 17u);                        // every 7, and 118
}

TEST(EpochPlan, ShardCapSeedsAndSchedule) {
  TrainOptions o;
  std::vector<std::uint32_t> shard(100);
  cap_shard(shard, o);  // 0: no cap
  EXPECT_EQ(shard.size(), 100u);
  o.train_examples = 30;
  cap_shard(shard, o);
  EXPECT_EQ(shard.size(), 30u);
  o.train_examples = 50;
  cap_shard(shard, o);  // never grows
  EXPECT_EQ(shard.size(), 30u);

  o.seed = 7;
  EXPECT_NE(shuffle_seed(o, 0), shuffle_seed(o, 1));  // ranks draw different orders
  EXPECT_EQ(shuffle_seed(o, 3), shuffle_seed(o, 3));

  o.lr = 0.1;
  o.warmup_epochs = 0.5;
  o.epochs = 2;
  o.lr_decay = "cosine";
  const auto s = lr_schedule(o, 10);  // 5 warm-up steps of 20
  EXPECT_LT(model::learning_rate_at(s, 0), 0.1);
  EXPECT_NEAR(model::learning_rate_at(s, 5), 0.1, 1e-9);
  EXPECT_LT(model::learning_rate_at(s, 19), 0.01);
  o.lr_decay = "sideways";
  EXPECT_THROW(lr_schedule(o, 10), std::invalid_argument);
}

}  // namespace
}  // namespace murmur::peer::train
