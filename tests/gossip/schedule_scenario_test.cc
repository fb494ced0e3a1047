// The scheduler in the loop on a time-varying network, without threads or
// sockets: 8 peers on an exponential graph, each with its own link and
// compute estimators and policy, fed with transfer times computed from a true
// profile that the scheduler never sees. Link 0 <-> 1 drops from 10 Gbit/s to
// 100 Mbit/s at round 10 and recovers at round 40; the ratio that rank 0 (and
// rank 1) chooses for it must follow each change within 20 rounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gossip/schedule/compute_estimator.h"
#include "gossip/schedule/decision_record.h"
#include "gossip/schedule/link_estimator.h"
#include "gossip/schedule/policy.h"
#include "gossip/topology/generators.h"

namespace murmur::gossip::schedule {
namespace {

constexpr int kPeers = 8;
constexpr int kRounds = 70;
constexpr int kDropRound = 10;
constexpr int kRecoverRound = 40;
constexpr double kComputeS = 0.010;
constexpr double kLatencyS = 25e-6;

// The emulated profile: only the simulation reads it.
double true_bandwidth(int from, int to, int round) {
  const bool dropped_link = (from == 0 && to == 1) || (from == 1 && to == 0);
  const bool dropped = dropped_link && round >= kDropRound && round < kRecoverRound;
  return dropped ? 100e6 / 8 : 10e9 / 8;
}

struct Rank {
  std::map<int, LinkEstimator> links;
  ComputeEstimator compute;
  AdaptivePolicy policy{ScheduleBounds{}};
};

struct Trace {
  std::vector<std::map<int, std::map<int, double>>> ratio;  // [round][rank][peer]
  std::vector<int> period;
  std::vector<nlohmann::json> rank0_records;
};

Trace simulate() {
  const Graph graph = exponential(kPeers);
  std::vector<Rank> ranks(kPeers);
  for (int r = 0; r < kPeers; ++r)
    for (const auto& l : graph.out(r)) ranks[r].links.emplace(l.peer, LinkEstimator{});
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> jitter(0.95, 1.05);
  auto transfer_s = [&](int from, int to, int round, double bytes) {
    return (kLatencyS + bytes / true_bandwidth(from, to, round)) * jitter(rng);
  };

  Trace trace;
  double now = 0;
  int period = 1;
  for (int round = 0; round < kRounds; ++round) {
    // The steps this round overlaps (and, before round 0, the first ones).
    for (int s = 0; s < period; ++s) {
      const double step = kComputeS * jitter(rng);
      for (Rank& rank : ranks) rank.compute.observe(step);
      now += step;
    }
    // Idle links (all of them, at the start) are probed with 64 bytes.
    for (int r = 0; r < kPeers; ++r)
      for (auto& [peer, est] : ranks[r].links)
        if (est.needs_probe(now)) est.observe(64, transfer_s(r, peer, round, 64), now);

    std::vector<ScheduleInputs> in(kPeers);
    int agreed = 0;
    for (int r = 0; r < kPeers; ++r) {
      in[r].round = static_cast<std::uint64_t>(round);
      in[r].compute_s_per_step = ranks[r].compute.seconds_per_step();
      in[r].parameters = 1'000'000;
      for (const auto& [peer, est] : ranks[r].links) {
        const LinkEstimate e = est.estimate();
        in[r].links.push_back({peer, e.latency_s, e.bandwidth_Bps, e.samples});
      }
      agreed = std::max(agreed, ranks[r].policy.propose_period(in[r]));
    }
    trace.ratio.emplace_back();
    double slowest = 0;
    for (int r = 0; r < kPeers; ++r) {
      const ScheduleDecision d = ranks[r].policy.decide(in[r], agreed);
      if (r == 0) trace.rank0_records.push_back(to_json(d, in[r]));
      trace.ratio.back()[r] = d.link_ratio;
      for (auto& [peer, est] : ranks[r].links) {
        const double bytes = message_bytes(in[r], d.link_ratio.at(peer));
        const double t = transfer_s(r, peer, round, bytes);
        est.observe(bytes, t, now + t);
        slowest = std::max(slowest, t);
      }
    }
    period = agreed;
    trace.period.push_back(agreed);
    // Exposed communication delays the next round.
    now += std::max(0.0, slowest - period * kComputeS);
  }
  return trace;
}

// First round in [from, kRounds) where rank's ratio to peer satisfies pred.
template <typename Pred>
int first_round(const Trace& t, int rank, int peer, int from, Pred pred) {
  for (int round = from; round < kRounds; ++round)
    if (pred(t.ratio[round].at(rank).at(peer))) return round;
  return kRounds;
}

TEST(ScheduleScenario, RatioFollowsALinkThatDropsAndRecovers) {
  const Trace t = simulate();
  for (int round = 0; round < kRounds; ++round) EXPECT_EQ(t.period[round], 1) << "round " << round;
  for (const auto& [a, b] : {std::pair{0, 1}, std::pair{1, 0}}) {
    SCOPED_TRACE(testing::Message() << "link " << a << " -> " << b);
    // Dense on the fast link once measured.
    for (int round = 2; round < kDropRound; ++round) EXPECT_EQ(t.ratio[round].at(a).at(b), 1.0);
    const int dropped = first_round(t, a, b, kDropRound, [](double r) { return r < 1.0; });
    testing::Test::RecordProperty("rounds_to_follow_drop_" + std::to_string(a) + std::to_string(b),
                                  dropped - kDropRound);
    EXPECT_LE(dropped - kDropRound, 20);
    // What the estimator promises: change_run (3) transfers, then the next decision.
    EXPECT_LE(dropped - kDropRound, 4);
    // 8 ms at 12.5 MB/s: 1/64 (see schedule_policy_test), held while slow.
    for (int round = dropped; round < kRecoverRound; ++round) EXPECT_EQ(t.ratio[round].at(a).at(b), 1.0 / 64);
    const int recovered = first_round(t, a, b, kRecoverRound, [](double r) { return r == 1.0; });
    testing::Test::RecordProperty("rounds_to_follow_recovery_" + std::to_string(a) + std::to_string(b),
                                  recovered - kRecoverRound);
    EXPECT_LE(recovered - kRecoverRound, 20);
    EXPECT_LE(recovered - kRecoverRound, 4);
    for (int round = recovered; round < kRounds; ++round) EXPECT_EQ(t.ratio[round].at(a).at(b), 1.0);
  }
  // Rank 0's other links never move.
  for (int peer : {2, 4, 6, 7})
    for (int round = 2; round < kRounds; ++round) EXPECT_EQ(t.ratio[round].at(0).at(peer), 1.0) << "peer " << peer;

  // The record of the round that compressed link 1 says why, with the
  // measurement behind it.
  const int dropped = first_round(t, 0, 1, kDropRound, [](double r) { return r < 1.0; });
  const nlohmann::json& record = t.rank0_records.at(static_cast<std::size_t>(dropped));
  EXPECT_EQ(record["changed"], true);
  EXPECT_NE(record["reason"].get<std::string>().find("link 1: ratio 1 -> 0.0156"), std::string::npos)
      << record["reason"];
  EXPECT_NEAR(record["links"][0]["bandwidth_Bps"].get<double>(), 100e6 / 8, 0.1 * 100e6 / 8);
}

}  // namespace
}  // namespace murmur::gossip::schedule

namespace murmur::gossip::schedule {
namespace {

// A link whose messages carry a large per-message cost (5 ms: a loaded host,
// a slow software stack) on top of 1.25 GB/s. Held at ratio 1/8 (left over
// from a slow period), it carries one message size, so its estimate cannot
// tell the 5 ms from the bandwidth: bytes / whole time says 134 MB/s and a
// larger ratio never looks affordable. Exploring (one round now and then at
// twice the bytes) gives the estimator a second size, and the ratio climbs
// to what fits.
double climb_from_one_eighth(int explore_rounds) {
  ScheduleBounds bounds;
  bounds.explore_rounds = explore_rounds;
  AdaptivePolicy policy(bounds);
  LinkEstimator estimator;
  ScheduleInputs in;
  in.compute_s_per_step = 0.013;  // budget 10.4 ms at period 1; a move up must fit 7.8 ms
  in.parameters = 1'000'000;
  in.per_link = false;
  double ratio = 0.125;
  double trial = 0;
  double now = 0;
  for (int round = 0; round < 120; ++round) {
    for (int k = 0; k < 5; ++k) {
      const double bytes = message_bytes(in, k == 0 && trial > 0 ? trial : ratio);
      estimator.observe(bytes, 0.005 + bytes / 1.25e9, now += 0.01);
    }
    const LinkEstimate e = estimator.estimate();
    in.links = {{1, e.latency_s, e.bandwidth_Bps, e.samples, e.line_identified}};
    const ScheduleDecision d = policy.decide(in);
    ratio = d.ratio;
    trial = d.explore_ratio;
  }
  return ratio;
}

TEST(ScheduleScenario, ExploringSeparatesPerMessageCostFromBandwidth) {
  // Without exploration the one-size estimate keeps it at 1/8 (750 KB in
  // 5.6 ms predicts 11.2 ms for 1/4).
  EXPECT_LE(climb_from_one_eighth(0), 0.125);
  // With it, one round at 1/2 (3 MB: 5 + 2.4 = 7.4 ms, the line is exact)
  // moves it to 1/2 at the next decision; a later try of 1 (4 MB dense:
  // 8.2 ms, over the 7.8 ms a move up needs) leaves it there.
  EXPECT_EQ(climb_from_one_eighth(20), 0.5);
}

}  // namespace
}  // namespace murmur::gossip::schedule
