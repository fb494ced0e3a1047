// Learning-rate schedule values and the refused specs.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "peer/model/lr_schedule.h"

namespace mm = murmur::peer::model;

namespace {

TEST(LrSchedule, WarmupThenCosine) {
  const auto s = mm::parse_lr_schedule(0.1, 10, 110, "cosine");
  EXPECT_NEAR(mm::learning_rate_at(s, 0), 0.01, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(s, 5), 0.055, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(s, 10), 0.1, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(s, 60), 0.05, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(s, 35), 0.05 * (1 + std::cos(3.14159265358979 / 4)), 1e-9);
  EXPECT_NEAR(mm::learning_rate_at(s, 110), 0.0, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(s, 500), 0.0, 1e-12);
}

TEST(LrSchedule, NoWarmupAndNoDecay) {
  const auto s = mm::parse_lr_schedule(0.2, 0, 100, "cosine");
  EXPECT_NEAR(mm::learning_rate_at(s, 0), 0.2, 1e-12);
  const auto flat = mm::parse_lr_schedule(0.3, 4, 100, "none");
  EXPECT_NEAR(mm::learning_rate_at(flat, 2), 0.3 * 0.55, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(flat, 4), 0.3, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(flat, 10000), 0.3, 1e-12);
}

TEST(LrSchedule, StepDecayAtAbsoluteMilestones) {
  const auto s = mm::parse_lr_schedule(1.0, 0, 1000, "step:100,200@0.1");
  EXPECT_NEAR(mm::learning_rate_at(s, 99), 1.0, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(s, 100), 0.1, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(s, 199), 0.1, 1e-12);
  EXPECT_NEAR(mm::learning_rate_at(s, 250), 0.01, 1e-12);
}

TEST(LrSchedule, RefusesBadSpecsNamingThem) {
  for (const char* decay :
       {"linear", "step:100", "step:a@0.1", "step:200,100@0.1", "step:100@0", "step:@0.5", "step:100@x", ""}) {
    try {
      mm::parse_lr_schedule(0.1, 0, 10, decay);
      ADD_FAILURE() << "accepted '" << decay << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + decay + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(mm::parse_lr_schedule(0, 0, 10, "none"), std::invalid_argument);
  EXPECT_THROW(mm::parse_lr_schedule(0.1, -1, 10, "none"), std::invalid_argument);
  EXPECT_THROW(mm::parse_lr_schedule(0.1, 0, 0, "none"), std::invalid_argument);
  // A hand-built spec is checked when used.
  EXPECT_THROW(mm::learning_rate_at(mm::LrScheduleSpec{0.1, 0, 10, "exp"}, 3), std::invalid_argument);
}

}  // namespace
