// VirtualRuntime: ordering and exactness of the virtual clock, deadlock
// reports, failure propagation with unwinding, reproducible traces, and
// enough threads for 1024 peers.
#include "sim/runtime/virtual_runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"

namespace murmur::sim::runtime {
namespace {

TEST(VirtualRuntime, SleepersWakeInTimeOrderAtExactTimes) {
  VirtualRuntime rt;
  std::vector<std::pair<std::string, double>> woke;
  for (double d : {3.0, 1.0, 2.0}) {
    rt.spawn("sleep " + std::to_string(d), [&rt, &woke, d] {
      rt.sleep_for(d);
      woke.emplace_back(std::to_string(d), rt.now());
    });
  }
  rt.spawn("quarters", [&] {
    for (int i = 0; i < 4; ++i) rt.sleep_for(0.25);
    woke.emplace_back("quarters", rt.now());
  });
  rt.run();
  ASSERT_EQ(woke.size(), 4u);
  // Two wake-ups due at 1.0: the one scheduled first (at t=0) runs first.
  EXPECT_EQ(woke[0], std::make_pair(std::to_string(1.0), 1.0));
  EXPECT_EQ(woke[1], std::make_pair(std::string("quarters"), 1.0));
  EXPECT_EQ(woke[2].second, 2.0);
  EXPECT_EQ(woke[3].second, 3.0);
  EXPECT_EQ(rt.now(), 3.0);
}

TEST(VirtualRuntime, EventsRunInTimeThenSchedulingOrderAndCancelledOnesNever) {
  VirtualRuntime rt;
  std::vector<std::string> order;
  rt.spawn("scheduler", [&] {
    rt.at(1.0, [&] { order.push_back("a@1"); });
    rt.at(1.0, [&] { order.push_back("b@1"); });
    rt.at(0.5, [&] { order.push_back("c@0.5"); });
    auto never = rt.at(0.7, [&] { order.push_back("cancelled"); });
    rt.cancel(never);
    rt.sleep_for(2);
    order.push_back("woke@" + std::to_string(static_cast<int>(rt.now())));
  });
  rt.run();
  EXPECT_EQ(order, (std::vector<std::string>{"c@0.5", "a@1", "b@1", "woke@2"}));
}

TEST(VirtualRuntime, WaitAndNotifyHandTheBatonWithoutAdvancingTime) {
  VirtualRuntime rt;
  int key = 0;
  bool ready = false;
  double seen = -1;
  rt.spawn("consumer", [&] {
    while (!ready) rt.wait(&key, "the producer");
    seen = rt.now();
  });
  rt.spawn("producer", [&] {
    rt.sleep_for(1.5);
    ready = true;
    rt.notify_all(&key);
  });
  rt.run();
  EXPECT_EQ(seen, 1.5);
}

TEST(VirtualRuntime, StartThreadAndJoinAreSimulated) {
  VirtualRuntime rt;
  double joined_at = -1;
  rt.spawn("parent", [&] {
    std::thread child = rt.start_thread("child", [&] { rt.sleep_for(2); });
    rt.sleep_for(0.5);
    rt.join(child);
    joined_at = rt.now();
  });
  rt.run();
  EXPECT_EQ(joined_at, 2.0);
  EXPECT_EQ(rt.threads_started(), 2u);
}

TEST(VirtualRuntime, DeadlockIsReportedNamingEveryBlockedThread) {
  VirtualRuntime rt;
  int a = 0, b = 0;
  rt.spawn("alice", [&] { rt.wait(&a, "a message from bob"); });
  rt.spawn("bob", [&] {
    rt.sleep_for(4);
    rt.wait(&b, "a message from alice");
  });
  rt.spawn("carol", [&] { rt.sleep_for(1); });  // finishes: not named
  try {
    rt.run();
    FAIL() << "no deadlock reported";
  } catch (const SimDeadlock& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("t=4"), std::string::npos) << what;
    EXPECT_NE(what.find("'alice' waits on a message from bob"), std::string::npos) << what;
    EXPECT_NE(what.find("'bob' waits on a message from alice"), std::string::npos) << what;
    EXPECT_EQ(what.find("carol"), std::string::npos) << what;
  }
}

// A hand-off wait is never cancelled: a thread stuck in one is abandoned
// (and leaked on purpose), but run() still returns with the report.
TEST(VirtualRuntime, ThreadsStuckInHandOffsAreAbandonedNotHungOn) {
  VirtualRuntime rt;
  static int key = 0;  // outlives the abandoned thread, which only ever waits on it
  rt.spawn("stuck", [&rt] { rt.wait_handoff(&key, "a hand-off nobody makes"); });
  try {
    rt.run();
    FAIL() << "no deadlock reported";
  } catch (const SimDeadlock& e) {
    EXPECT_NE(std::string(e.what()).find("'stuck' waits on a hand-off nobody makes"), std::string::npos) << e.what();
  }
}

TEST(VirtualRuntime, FirstFailureSurfacesAndTheOthersUnwind) {
  VirtualRuntime rt;
  int never = 0;
  bool destructor_slept = false;
  struct SleepsInDestructor {
    VirtualRuntime& rt;
    bool& done;
    ~SleepsInDestructor() {
      rt.sleep_for(1);  // unwinding: blocks normally instead of throwing
      done = true;
    }
  };
  rt.spawn("waits forever", [&] {
    SleepsInDestructor guard{rt, destructor_slept};
    rt.wait(&never, "nothing");
  });
  rt.spawn("sleeps long", [&] { rt.sleep_for(1000); });
  rt.spawn("fails", [&] {
    rt.sleep_for(2);
    throw std::runtime_error("boom at t=2");
  });
  rt.spawn("fails later", [&] {
    rt.sleep_for(2);
    throw std::runtime_error("second failure");
  });
  EXPECT_THROW(
      {
        try {
          rt.run();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "boom at t=2");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_TRUE(destructor_slept);
  EXPECT_EQ(rt.now(), 3.0);  // the destructor's sleep; the 1000 s one was cancelled
}

TEST(VirtualRuntime, EventFailureSurfaces) {
  VirtualRuntime rt;
  rt.spawn("schedules a bad event", [&] {
    rt.at(1, [] { throw std::logic_error("bad event"); });
    rt.sleep_for(5);
  });
  EXPECT_THROW(rt.run(), std::logic_error);
}

TEST(VirtualRuntime, BlockingOutsideASimulatedThreadIsABug) {
  VirtualRuntime rt;
  EXPECT_THROW(rt.sleep_for(1), InvariantError);
  int key = 0;
  EXPECT_THROW(rt.wait(&key, "x"), InvariantError);
}

TEST(VirtualRuntime, ThreadsSpawnedButNeverRunAreUnwoundByTheDestructor) {
  bool ran = false;
  {
    VirtualRuntime rt;
    rt.spawn("never runs", [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

// A small program with seeded randomness in what each thread does: its
// trace of baton hand-offs must be the same in every run.
std::vector<std::string> traced_run() {
  VirtualRuntime rt;
  rt.set_tracing(true);
  int mailbox = 0;
  int delivered = 0;
  for (int p = 0; p < 8; ++p) {
    rt.spawn("p" + std::to_string(p), [&, p] {
      std::mt19937 rng(p);
      for (int i = 0; i < 20; ++i) {
        rt.sleep_for(std::uniform_real_distribution<double>(0, 1)(rng));
        if (rng() % 3 == 0) {
          ++delivered;
          rt.at(rt.now() + 0.1, [&] { rt.notify_all(&mailbox); });
        }
        if (p % 2 == 0 && i % 5 == 0) {
          std::thread helper = rt.start_thread("p" + std::to_string(p) + "/helper", [&rt] { rt.sleep_for(0.05); });
          rt.join(helper);
        }
      }
    });
  }
  rt.run();
  EXPECT_GT(delivered, 0);
  return rt.trace();
}

TEST(VirtualRuntime, RunsAreReproducible) {
  auto first = traced_run();
  auto second = traced_run();
  EXPECT_GT(first.size(), 300u);
  EXPECT_EQ(first, second);
}

// 1024 peers with a helper thread each, as murmur-sim runs them.
TEST(VirtualRuntime, TwoThousandThreads) {
  VirtualRuntime rt;
  constexpr int kPeers = 1024;
  int done = 0;
  for (int p = 0; p < kPeers; ++p) {
    rt.spawn("peer " + std::to_string(p), [&, p] {
      std::thread helper = rt.start_thread("helper", [&rt, p] { rt.sleep_for(0.001 * (p % 7)); });
      for (int i = 0; i < 3; ++i) rt.sleep_for(0.01);
      rt.join(helper);
      ++done;
    });
  }
  const auto start = std::chrono::steady_clock::now();
  rt.run();
  const double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(done, kPeers);
  EXPECT_DOUBLE_EQ(rt.now(), 0.03);
  std::printf("2048 threads, %llu hand-offs in %.2f s host time\n", static_cast<unsigned long long>(rt.switches()),
              host_s);
}

}  // namespace
}  // namespace murmur::sim::runtime
