// FutileRoundBackoff: when the libfabric progress thread naps because the
// provider keeps it awake for nothing, on clocks the test moves by hand.
#include "fabric/libfabric/futile_round_backoff.h"

#include <gtest/gtest.h>

#include <time.h>

#include <cstddef>
#include <cstdint>

namespace murmur::fabric::libfabric {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using Clock = FutileRoundBackoff::Clock;

// A progress thread's two clocks: wall time and its own CPU time, which
// the backoff reads through cpu_clock().
struct Thread {
  FutileRoundBackoff::CpuClock cpu_clock() {
    return [this] { return cpu; };
  }

  Clock::time_point now = Clock::time_point{} + milliseconds(1);
  nanoseconds cpu{0};
  microseconds napped{0};

  // A round that found nothing: `running` on a CPU, `in_wait` asleep in
  // the provider's wait, `off_cpu` blocked on the role or preempted, then
  // the nap it is given.
  microseconds idle_round(FutileRoundBackoff& backoff, microseconds running, microseconds in_wait = {},
                          microseconds off_cpu = {}) {
    now += running + in_wait + off_cpu;
    cpu += running;
    const auto nap = backoff.note_idle_round(now, in_wait);
    now += nap;
    napped += nap;
    return nap;
  }
  // Spinning rounds until `length` has passed.
  void spin_for(FutileRoundBackoff& backoff, Clock::duration length, microseconds round = microseconds(2)) {
    const auto until = now + length;
    while (now < until) idle_round(backoff, round);
  }
};

TEST(FutileRoundBackoff, NoNapWithinTheGrace) {
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  thread.spin_for(backoff, milliseconds(9));
  EXPECT_EQ(backoff.naps(), 0u);
}

TEST(FutileRoundBackoff, AProviderThatNeverLetsTheThreadSleepGetsNapsThatDoubleToTheCap) {
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  thread.spin_for(backoff, milliseconds(10));
  EXPECT_EQ(backoff.naps(), 0u);
  const microseconds round(2);
  EXPECT_EQ(thread.idle_round(backoff, round), microseconds(50));
  EXPECT_EQ(thread.idle_round(backoff, round), microseconds(100));
  EXPECT_EQ(thread.idle_round(backoff, round), microseconds(200));
  EXPECT_EQ(thread.idle_round(backoff, round), microseconds(400));
  EXPECT_EQ(thread.idle_round(backoff, round), microseconds(800));
  EXPECT_EQ(thread.idle_round(backoff, round), microseconds(1000));
  EXPECT_EQ(thread.idle_round(backoff, round), microseconds(1000));
}

TEST(FutileRoundBackoff, After100MsOfNapsTheNapsAreLonger) {
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  thread.spin_for(backoff, milliseconds(10) + milliseconds(95));
  EXPECT_EQ(thread.idle_round(backoff, microseconds(2)), FutileRoundBackoff::kMaxNap);
  thread.spin_for(backoff, milliseconds(6));
  EXPECT_EQ(thread.idle_round(backoff, microseconds(2)), FutileRoundBackoff::kDeepNap);
}

TEST(FutileRoundBackoff, ASpinningProviderCostsWellUnderOnePercentOfACore) {
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  const auto start = thread.now;
  thread.spin_for(backoff, std::chrono::seconds(60), microseconds(5));
  const double cpu_share =
      std::chrono::duration<double>(thread.cpu).count() / std::chrono::duration<double>(thread.now - start).count();
  EXPECT_LT(cpu_share, 0.01);
}

TEST(FutileRoundBackoff, OnceNappingItNapsUntilWork) {
  // The naps themselves use no CPU; they must not end the napping (which
  // would let the spin come back for half of the time).
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  thread.spin_for(backoff, milliseconds(11));
  const auto naps = backoff.naps();
  ASSERT_GT(naps, 0u);
  for (int round = 0; round < 1000; ++round) EXPECT_GT(thread.idle_round(backoff, microseconds(2)).count(), 0);
  EXPECT_EQ(backoff.naps(), naps + 1000);
}

TEST(FutileRoundBackoff, WorkEndsTheStretchAndTheNapsStartShortAgain) {
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  thread.spin_for(backoff, milliseconds(20));
  ASSERT_GT(backoff.naps(), 0u);
  backoff.note_work();
  const auto naps = backoff.naps();
  thread.spin_for(backoff, milliseconds(9));
  EXPECT_EQ(backoff.naps(), naps);
  thread.spin_for(backoff, milliseconds(1) + microseconds(10));
  EXPECT_EQ(thread.idle_round(backoff, microseconds(2)), microseconds(100));  // the second nap
}

TEST(FutileRoundBackoff, AThreadThatSleepsInTheProvidersWaitNeverNaps) {
  // An idle transport, or a transfer on a slow link: every wait sleeps
  // most of the round away; no completion for a second.
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  for (int round = 0; round < 10000; ++round) thread.idle_round(backoff, microseconds(20), microseconds(80));
  EXPECT_EQ(backoff.naps(), 0u);
}

TEST(FutileRoundBackoff, ASpinThatOtherThreadsKeepOffTheCpuIsStillASpin) {
  // A loaded host: the spinning thread runs a fifth of the time, and never
  // sleeps in the provider's wait.
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  while (thread.now < Clock::time_point{} + milliseconds(30))
    thread.idle_round(backoff, microseconds(2), {}, microseconds(8));
  EXPECT_GT(backoff.naps(), 0u);
}

TEST(FutileRoundBackoff, ThreadsThatRunLessThanTheySleepNeverNap) {
  // Rounds blocked on the progress role for a while (a caller drives),
  // whose waits then sleep longer than the round ran.
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  for (int round = 0; round < 1000; ++round) {
    thread.idle_round(backoff, microseconds(30), microseconds(40), milliseconds(2));
  }
  EXPECT_EQ(backoff.naps(), 0u);
}

TEST(FutileRoundBackoff, AWaitThatSleepsAMillisecondEndsTheNapping) {
  // A provider that kept the thread awake while a connection came up, then
  // lets it block: later messages must not wait out naps.
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  thread.spin_for(backoff, milliseconds(15));
  ASSERT_GT(backoff.naps(), 0u);
  const auto naps = backoff.naps();
  EXPECT_EQ(thread.idle_round(backoff, microseconds(3), milliseconds(20)), microseconds(0));
  for (int round = 0; round < 100; ++round) thread.idle_round(backoff, microseconds(3), milliseconds(20));
  EXPECT_EQ(backoff.naps(), naps);
}

TEST(FutileRoundBackoff, MostlyOnTheCpuIsFutileEvenWithSomeSleep) {
  // Waits that end after 10 us of rounds of 40: the provider wakes the
  // thread at once most of the time.
  Thread thread;
  FutileRoundBackoff backoff(milliseconds(10), thread.cpu_clock());
  while (thread.now < Clock::time_point{} + milliseconds(30))
    thread.idle_round(backoff, microseconds(30), microseconds(10));
  EXPECT_GT(backoff.naps(), 0u);
  EXPECT_GT(thread.napped, milliseconds(5));
}

double grace_ms(std::size_t chunk_bytes) {
  using Milliseconds = std::chrono::duration<double, std::milli>;
  return std::chrono::duration_cast<Milliseconds>(FutileRoundBackoff::grace_for_chunk(chunk_bytes)).count();
}

TEST(FutileRoundBackoff, TheGraceCoversAChunkAt400MBPerSecond) {
  EXPECT_EQ(FutileRoundBackoff::grace_for_chunk(4096), FutileRoundBackoff::kMinGrace);
  EXPECT_NEAR(grace_ms(std::size_t{4} << 20), 10.49, 0.01);  // 4 MiB at 400 MB/s
  EXPECT_NEAR(grace_ms(std::size_t{64} << 20), 167.77, 0.01);
}

TEST(FutileRoundBackoff, TheThreadCpuClockMovesWithWorkNotWithSleep) {
  const auto before = FutileRoundBackoff::thread_cpu_now();
  volatile std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < 20000000; ++i) sink = sink + i;
  const auto after_work = FutileRoundBackoff::thread_cpu_now();
  EXPECT_GT(after_work, before);
  timespec ts{0, 50 * 1000 * 1000};
  nanosleep(&ts, nullptr);
  EXPECT_LT(FutileRoundBackoff::thread_cpu_now() - after_work, milliseconds(25));
}

}  // namespace
}  // namespace murmur::fabric::libfabric
