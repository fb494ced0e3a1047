// SpinPolicy: when the libfabric progress thread polls and when it blocks,
// on a clock the test moves by hand (no timing in the test).
#include "fabric/libfabric/spin_policy.h"

#include <gtest/gtest.h>

namespace murmur::fabric::libfabric {
namespace {

using std::chrono::microseconds;
using Clock = SpinPolicy::Clock;

TEST(SpinPolicy, AnIdleTransportNeverPolls) {
  SpinPolicy spin(microseconds(50));
  const auto t = Clock::time_point{} + microseconds(1000);
  EXPECT_FALSE(spin.keep_polling(t, /*outstanding=*/false));
  EXPECT_EQ(spin.budget(), microseconds(50));  // nothing was tried, nothing learned
}

TEST(SpinPolicy, PollsUpToTheBudgetThenBlocksAndHalvesIt) {
  SpinPolicy spin(microseconds(40));
  const auto t = Clock::time_point{} + microseconds(1000);
  EXPECT_TRUE(spin.keep_polling(t, true));
  EXPECT_TRUE(spin.keep_polling(t + microseconds(39), true));
  EXPECT_FALSE(spin.keep_polling(t + microseconds(40), true));  // a miss
  EXPECT_EQ(spin.budget(), microseconds(20));
  // Still the same stretch after a wake-up without work: it keeps blocking.
  EXPECT_FALSE(spin.keep_polling(t + microseconds(500), true));
  EXPECT_EQ(spin.budget(), microseconds(20));
}

TEST(SpinPolicy, LongWaitsDriveTheBudgetToZero) {
  SpinPolicy spin(microseconds(50));
  auto t = Clock::time_point{} + microseconds(1000);
  for (int stretch = 0; stretch < 8; ++stretch) {
    while (spin.keep_polling(t, true)) t += microseconds(1);
    t += microseconds(20000);  // blocked; the completion comes much later
    spin.note_work(t);
  }
  EXPECT_EQ(spin.budget(), microseconds(0));
  EXPECT_FALSE(spin.keep_polling(t, true));  // blocks at once
}

TEST(SpinPolicy, ACompletionSoonAfterBlockingBringsPollingBack) {
  SpinPolicy spin(microseconds(50));
  auto t = Clock::time_point{} + microseconds(1000);
  for (int stretch = 0; stretch < 8; ++stretch) {
    while (spin.keep_polling(t, true)) t += microseconds(1);
    t += microseconds(20000);
    spin.note_work(t);
  }
  ASSERT_EQ(spin.budget(), microseconds(0));
  // Blocked, but the completion came 15 us later: polling would have caught it.
  EXPECT_FALSE(spin.keep_polling(t, true));
  spin.note_work(t + microseconds(15));
  EXPECT_EQ(spin.budget(), microseconds(30));
  // Caught while polling: the budget doubles, capped at the maximum.
  t += microseconds(100);
  EXPECT_TRUE(spin.keep_polling(t, true));
  spin.note_work(t + microseconds(5));
  EXPECT_EQ(spin.budget(), microseconds(50));
}

TEST(SpinPolicy, ZeroMeansNeverPoll) {
  SpinPolicy spin(microseconds(0));
  const auto t = Clock::time_point{} + microseconds(1000);
  EXPECT_FALSE(spin.keep_polling(t, true));
  spin.note_work(t + microseconds(1));
  EXPECT_EQ(spin.budget(), microseconds(0));
}

TEST(SpinPolicy, AStretchEndedByANewPostTeachesNothing) {
  SpinPolicy spin(microseconds(50));
  auto t = Clock::time_point{} + microseconds(1000);
  while (spin.keep_polling(t, true)) t += microseconds(1);
  spin.note_work(t + microseconds(20000));
  ASSERT_EQ(spin.budget(), microseconds(25));
  // Nothing outstanding; 10 us later the caller posts: no completion was near.
  t += microseconds(30000);
  EXPECT_FALSE(spin.keep_polling(t, false));
  spin.note_work(t + microseconds(10));
  EXPECT_EQ(spin.budget(), microseconds(25));
}

}  // namespace
}  // namespace murmur::fabric::libfabric
