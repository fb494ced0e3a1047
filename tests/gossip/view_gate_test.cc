// ViewGate's agreement rule, with hand-made reports: when a view takes
// effect, what before() lets through while a report is out, superseded
// proposals, and a member that is not in the view.
#include "gossip/algorithm/view_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>

#include "tests/support/wait.h"

namespace murmur::testing {
namespace {

using namespace std::chrono_literals;
using gossip::View;
using gossip::ViewChange;
using gossip::ViewGate;

ViewChange plain(const View& /*from*/, const View& to) {
  ViewChange c;
  c.view = to;
  return c;
}

// An agreement whose other members' reports are fixed: `others` is what
// they reported; this member's own report is recorded in `mine`.
ViewGate::Agree fixed_reports(std::vector<std::uint64_t> others, std::atomic<std::uint64_t>& mine,
                              std::promise<void>* release = nullptr) {
  auto released = release ? std::make_shared<std::shared_future<void>>(release->get_future().share()) : nullptr;
  return [others, &mine, released](const View&, std::uint64_t report, const std::function<bool()>&) {
    mine = report;
    if (released) released->wait();
    auto all = others;
    all.push_back(report);
    return std::optional<std::vector<std::uint64_t>>(all);
  };
}

TEST(ViewGate, TakesEffectTwoRoundsAfterTheLatestReport) {
  std::atomic<std::uint64_t> mine{0};
  // The others started rounds 9 and 7: they report 11 and 9.
  ViewGate gate(View{0, {0, 1, 2}}, 0, fixed_reports({11, 9}, mine), plain);
  for (std::uint64_t r = 0; r <= 5; ++r) EXPECT_FALSE(gate.before(r));
  gate.propose(View{1, {0, 1}});
  ASSERT_TRUE(wait_for([&] { return gate.committed() == 1; }, 10s));
  EXPECT_EQ(mine.load(), 7u);  // two after the last round started when it reported
  // max(7, 11, 9) = 11
  for (std::uint64_t r = 6; r <= 10; ++r) EXPECT_FALSE(gate.before(r)) << r;
  auto change = gate.before(11);
  ASSERT_TRUE(change);
  EXPECT_EQ(change->view.generation, 1u);
  EXPECT_EQ(change->first_round, 11u);
  EXPECT_EQ(gate.current().members, (std::vector<int>{0, 1}));
}

TEST(ViewGate, StartsAtMostOneMoreRoundWhileAReportIsOut) {
  std::atomic<std::uint64_t> mine{0};
  std::promise<void> release;
  ViewGate gate(View{0, {0, 1}}, 1, fixed_reports({5}, mine, &release), plain);
  EXPECT_FALSE(gate.before(3));
  gate.propose(View{1, {0, 1}});
  ASSERT_TRUE(wait_for([&] { return mine.load() == 5u; }, 10s));
  EXPECT_FALSE(gate.before(4));  // s + 1 may start
  auto blocked = std::async(std::launch::async, [&] { return gate.before(5); });
  EXPECT_EQ(blocked.wait_for(200ms), std::future_status::timeout);  // s + 2 waits for the agreement
  release.set_value();
  auto change = blocked.get();  // R = max(5, 5) = 5: takes effect right there
  ASSERT_TRUE(change);
  EXPECT_EQ(change->first_round, 5u);
  // Blocked at all: how long depends on when the async thread got to run
  // (late on a loaded machine), so no more than that is asserted.
  EXPECT_GT(gate.blocked_seconds(), 0.0);
}

TEST(ViewGate, AMemberNotInTheViewIsTold) {
  std::atomic<std::uint64_t> mine{0};
  ViewGate gate(View{0, {0, 1, 2}}, 2, fixed_reports({}, mine), plain);
  gate.propose(View{1, {0, 1}}, "rank 2 (h): no heartbeat for 3 s");
  try {
    gate.before(0);
    FAIL() << "before() should throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not in the job's membership view 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no heartbeat"), std::string::npos) << e.what();
  }
}

TEST(ViewGate, ASupersededAgreementIsAbandonedForTheLaterView) {
  // View 1 keeps rank 2, which never reports; view 2 drops it: the gate
  // abandons view 1 (its abandon() turns true) and agrees on view 2.
  std::atomic<int> abandoned{0};
  ViewGate::Agree agree = [&](const View& v, std::uint64_t report,
                              const std::function<bool()>& abandon) -> std::optional<std::vector<std::uint64_t>> {
    if (v.generation == 1) {
      // abandon() notifies nobody: polled with a deadline, so that a gate that
      // never abandons fails the test instead of hanging it.
      if (murmur::testing::wait_for(abandon, 30s)) ++abandoned;
      return std::nullopt;
    }
    return std::vector<std::uint64_t>{report, report};
  };
  ViewGate gate(View{0, {0, 1, 2, 3}}, 0, agree, plain);
  gate.propose(View{1, {0, 1, 2}});
  gate.propose(View{2, {0, 1}});
  ASSERT_TRUE(wait_for([&] { return gate.committed() == 2; }, 10s));
  EXPECT_EQ(abandoned.load(), 1);
  auto change = gate.before(2);
  ASSERT_TRUE(change);
  EXPECT_EQ(change->view.generation, 2u);
}

TEST(ViewGate, AJoiningMemberEntersAtTheFirstRoundOfTheViewThatAdmitsIt) {
  std::atomic<std::uint64_t> mine{0};
  // Rank 2 joins: the members started rounds 40 and 41.
  ViewGate gate(View{3, {0, 1}}, 2, fixed_reports({42, 43}, mine), plain);
  auto entered = std::async(std::launch::async, [&] { return gate.before(0); });
  EXPECT_EQ(entered.wait_for(100ms), std::future_status::timeout);  // not admitted yet
  gate.propose(View{4, {0, 1, 2}});
  auto change = entered.get();
  ASSERT_TRUE(change);
  EXPECT_EQ(change->view.generation, 4u);
  EXPECT_EQ(change->first_round, 43u);
  EXPECT_EQ(mine.load(), 2u);  // no round started: it imposes nothing
  EXPECT_FALSE(gate.before(44));
}

TEST(ViewGate, AJoinerAdoptsEveryViewThatTakesEffectAtItsFirstRound) {
  // Two joiners admitted one after the other, both views agreed for round
  // 43: the first joiner must switch to the second view at 43, as the
  // members do, not one round later.
  std::atomic<std::uint64_t> mine{0};
  ViewGate gate(View{3, {0, 1}}, 2, fixed_reports({42, 43}, mine), plain);
  gate.propose(View{4, {0, 1, 2}});
  gate.propose(View{5, {0, 1, 2, 3}});
  ASSERT_TRUE(wait_for([&] { return gate.committed() == 5; }, 10s));
  auto change = gate.before(0);
  ASSERT_TRUE(change);
  EXPECT_EQ(change->view.generation, 5u);
  EXPECT_EQ(change->first_round, 43u);
}

TEST(ViewGate, AFailedAgreementFailsBefore) {
  ViewGate::Agree agree = [](const View&, std::uint64_t,
                             const std::function<bool()>&) -> std::optional<std::vector<std::uint64_t>> {
    throw std::runtime_error("no rendezvous");
  };
  ViewGate gate(View{0, {0, 1}}, 0, agree, plain);
  gate.propose(View{1, {0}});
  EXPECT_TRUE(wait_for(
      [&] {
        try {
          gate.before(5);
          return false;
        } catch (const std::runtime_error&) {
          return true;
        }
      },
      10s));
}

}  // namespace
}  // namespace murmur::testing
