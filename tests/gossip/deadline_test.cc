// FailureDeadline (gossip/algorithm/deadline.h): how long a silent peer is
// given, derived from the waits this rank observed.
#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>
#include <vector>

#include "gossip/algorithm/deadline.h"

namespace murmur::gossip {
namespace {

TEST(FailureDeadline, IsTheFloorUntilEnoughSamples) {
  FailureDeadline deadline(DeadlineOptions{});
  EXPECT_EQ(deadline.deadline_s(), 2.0);
  for (int i = 0; i < 15; ++i) deadline.observe(1.0);
  EXPECT_EQ(deadline.deadline_s(), 2.0);  // 15 < min_samples
  deadline.observe(1.0);
  EXPECT_EQ(deadline.deadline_s(), 8.0);  // 8 x p99 of 1 s
  EXPECT_EQ(deadline.samples(), 16u);
}

TEST(FailureDeadline, FastWaitsKeepTheFloor) {
  FailureDeadline deadline(DeadlineOptions{});
  for (int i = 0; i < 300; ++i) deadline.observe(0.001);
  EXPECT_EQ(deadline.deadline_s(), 2.0);
}

TEST(FailureDeadline, FollowsAShiftedDistribution) {
  FailureDeadline deadline(DeadlineOptions{});
  // 256 waits 0.30, 0.31, ..., nearest-rank p99 = the 254th smallest.
  for (int i = 0; i < 256; ++i) deadline.observe(0.30 + 0.001 * i);
  EXPECT_DOUBLE_EQ(deadline.deadline_s(), 8 * (0.30 + 0.001 * 253));
  // The network slows down by 0.5 s: once the window has only new waits, the
  // deadline is 8 x their p99.
  for (int i = 0; i < 256; ++i) deadline.observe(0.80 + 0.001 * i);
  EXPECT_DOUBLE_EQ(deadline.deadline_s(), 8 * (0.80 + 0.001 * 253));
  // Back to fast: while half the window is slow waits, their tail still sets
  // p99 (suspicion stays cautious); once they are gone, it drops.
  for (int i = 0; i < 128; ++i) deadline.observe(0.30);
  EXPECT_DOUBLE_EQ(deadline.deadline_s(), 8 * (0.80 + 0.001 * 253));
  for (int i = 0; i < 128; ++i) deadline.observe(0.30);
  EXPECT_DOUBLE_EQ(deadline.deadline_s(), 8 * 0.30);
}

TEST(FailureDeadline, ClampsAtTheCeiling) {
  FailureDeadline deadline(DeadlineOptions{});
  for (int i = 0; i < 32; ++i) deadline.observe(10.0);
  EXPECT_EQ(deadline.deadline_s(), 60.0);
}

TEST(FailureDeadline, OneOutlierBarelyMovesAFullWindowsP99) {
  FailureDeadline deadline(DeadlineOptions{});
  for (int i = 0; i < 256; ++i) deadline.observe(0.50 + 0.0004 * i);
  const double before = deadline.deadline_s();
  deadline.observe(30.0);  // one round that waited 30 s (replaces the oldest wait)
  const double after = deadline.deadline_s();
  EXPECT_LT(after - before, 0.01 * before) << before << " -> " << after;
  EXPECT_LT(after, 60.0);
}

TEST(FailureDeadline, TwoThreadsObserving) {
  FailureDeadline deadline(DeadlineOptions{});
  constexpr int kEach = 20000;
  auto observer = [&](double wait) {
    for (int i = 0; i < kEach; ++i) {
      deadline.observe(wait);
      if (i % 100 == 0) {
        EXPECT_GE(deadline.deadline_s(), 2.0);
      }
    }
  };
  std::thread a(observer, 0.5);
  std::thread b(observer, 1.0);
  a.join();
  b.join();
  EXPECT_EQ(deadline.samples(), 2u * kEach);
  // Whichever thread finished last, the window holds only 0.5 s and 1 s waits.
  const double d = deadline.deadline_s();
  EXPECT_TRUE(d == 4.0 || d == 8.0) << d;
}

TEST(FailureDeadline, RefusesOptionsOutOfRange) {
  auto with = [](auto change) {
    DeadlineOptions options;
    change(options);
    return options;
  };
  EXPECT_THROW(FailureDeadline(with([](auto& o) { o.multiplier = 0; })), std::invalid_argument);
  EXPECT_THROW(FailureDeadline(with([](auto& o) { o.percentile = 1.5; })), std::invalid_argument);
  EXPECT_THROW(FailureDeadline(with([](auto& o) { o.floor_s = 0; })), std::invalid_argument);
  EXPECT_THROW(FailureDeadline(with([](auto& o) { o.ceiling_s = 1; })), std::invalid_argument);
  EXPECT_THROW(FailureDeadline(with([](auto& o) { o.window = 0; })), std::invalid_argument);
  EXPECT_THROW(FailureDeadline(with([](auto& o) { o.min_samples = 300; })), std::invalid_argument);
  EXPECT_NO_THROW(FailureDeadline(with([](auto& o) { o.min_samples = 1; })));
}

}  // namespace
}  // namespace murmur::gossip
