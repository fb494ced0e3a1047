// epoch_plan: the steps per epoch and evaluation steps that murmur-peer's
// trainer and the simulator's share.
#include "peer/train/epoch_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace murmur::train {
namespace {

std::vector<long> evaluation_steps(long steps, int evals) {
  std::vector<long> at;
  for (long s = 1; s <= steps; ++s)
    if (is_evaluation_step(s, steps, evals)) at.push_back(s);
  return at;
}

TEST(EpochPlan, StepsPerEpochIsTheMeanShardInBatches) {
  EXPECT_EQ(steps_per_epoch(60000, 8, 0, 64), 118);  // 7500 / 64, the last batch short
  EXPECT_EQ(steps_per_epoch(60000, 8, 1000, 64), 16);  // capped shard
  EXPECT_EQ(steps_per_epoch(60000, 8, 100000, 64), 118);  // a cap above the shard changes nothing
  EXPECT_EQ(steps_per_epoch(64, 1, 0, 64), 1);
}

TEST(EpochPlan, EvaluationsInsideTheEpochAndAtItsEnd) {
  EXPECT_EQ(evaluation_steps(16, 1), (std::vector<long>{16}));
  EXPECT_EQ(evaluation_steps(16, 4), (std::vector<long>{4, 8, 12, 16}));
  EXPECT_EQ(evaluation_steps(16, 3), (std::vector<long>{5, 10, 15, 16}));  // 16 / 3 = 5
  EXPECT_EQ(evaluation_steps(3, 8), (std::vector<long>{1, 2, 3}));          // at most every step
  EXPECT_EQ(evaluation_steps(118, 16).size(), 17u);                           // every 7, and 118
}

}  // namespace
}  // namespace murmur::train
