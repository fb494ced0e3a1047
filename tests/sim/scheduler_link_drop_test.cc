// The latency-aware scheduler end to end on the simulator: the real choco
// and ScheduleController of every rank, 8 peers on an exponential graph, one
// link dropping from 10 Gbit/s to 100 Mbit/s and recovering. The issue's
// must-show (ratio or period of that link changes within 20 rounds of each
// change), with clean measurements: no host CPU noise in virtual time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/log.h"
#include "gossip/schedule/schedule_file.h"
#include "sim/runtime/gossip_run.h"

namespace murmur::sim::runtime {
namespace {

struct Decision {
  double time_s;
  std::uint64_t round;
  double ratio;
  int period;
  bool agreed;              // false: a reaction between agreements
  double dropped_link_Bps;  // the estimate of the link to the other end of 0 <-> 1 (0: none)
};

ModelProfile one_tensor_model() {
  ModelProfile p;
  p.name = "one-tensor";
  p.batch = 32;
  // 4 MB, 30 ms per step: five dense 4 MB messages through one 10 Gbit/s NIC
  // (16 ms) fit under the budget (0.8 x 30 ms) with room for the hysteresis
  // band, so the ratio before the drop, and back after it, is 1.
  p.layers.push_back({"w", 1'000'000, 0.010, 0.020});
  p.single_gpu_samples_per_s = p.batch / p.iteration_s();
  return p;
}

class SchedulerLinkDrop : public ::testing::Test {
 protected:
  static constexpr double kDrop = 2.0, kRecover = 6.0;  // virtual seconds

  // `schedule`: "adaptive", or "fixed" with choco at `ratio` every step.
  std::map<int, std::vector<Decision>> run(const std::string& schedule = "adaptive", double ratio = 0.01,
                                           int interval = 1) {
    sched_log().set_level(spdlog::level::warn);  // 8 ranks x 500 decisions
    GossipSetup s;
    s.profile = one_tensor_model();
    s.cluster.gpus = 8;
    s.cluster.gpus_per_node = 1;
    s.cluster.network = "custom";
    s.cluster.inter_node = {20e-6, 1.25e9};
    s.cluster.episodes.push_back({0, 1, kDrop, kRecover, {20e-6, 12.5e6}});
    s.options.algorithm = "choco";
    s.options.compressor = "topk:" + std::to_string(ratio);
    s.options.gamma = 0.5;
    s.options.topology = "exponential";
    if (schedule == "adaptive") s.options.schedule = schedule;
    s.options.schedule_interval = interval;
    s.warmup_iterations = 0;
    s.iterations = 500;
    s.proxy = 4096;
    std::map<int, std::vector<Decision>> decisions;
    s.on_decision = [&](int rank, double t, const nlohmann::json& d) {
      double bandwidth = 0;
      for (const auto& l : d.at("links"))
        if (rank < 2 && l.at("peer").get<int>() == 1 - rank) bandwidth = l.at("bandwidth_Bps").get<double>();
      decisions[rank].push_back({t, d.at("round").get<std::uint64_t>(), d.at("ratio").get<double>(),
                                 d.at("period").get<int>(), d.value("agreed", true), bandwidth});
    };
    last_ = run_gossip(s);
    return decisions;
  }

  // The index of the first decision at or after time t.
  static std::size_t first_after(const std::vector<Decision>& ds, double t) {
    return static_cast<std::size_t>(
        std::find_if(ds.begin(), ds.end(), [&](const Decision& d) { return d.time_s >= t; }) - ds.begin());
  }

  GossipResult last_;
};

TEST_F(SchedulerLinkDrop, BothEndsFollowTheDropAndTheRecoveryWithin20Rounds) {
  const auto decisions = run();
  for (int rank : {0, 1}) {
    const auto& ds = decisions.at(rank);
    const std::size_t drop = first_after(ds, kDrop), recover = first_after(ds, kRecover);
    ASSERT_LT(recover + 25, ds.size()) << "rank " << rank << ": the run ended too early";
    const Decision before = ds[drop - 1];
    // Within 20 rounds of the drop: more compression or a longer period.
    std::size_t reacted = drop;
    while (reacted < recover && ds[reacted].ratio >= before.ratio && ds[reacted].period <= before.period) ++reacted;
    EXPECT_LE(reacted - drop, 20U) << "rank " << rank << " ratio " << before.ratio << " before the drop";
    // Fast attack: the first slow transfer counts (LinkEstimate::
    // suspect_bandwidth_Bps), so the next decision or the one after (while
    // a dense message is in flight) already compresses.
    EXPECT_LE(reacted - drop, 2U) << "rank " << rank;
    EXPECT_GT(reacted, drop) << "rank " << rank << " moved before the drop";
    // Within 20 rounds of the recovery: back to at least the ratio and at
    // most the period of before the drop.
    // Just before the recovery the link is still known to be slow, and the
    // rank still compresses or skips. (Not necessarily more than before
    // the drop: while the link is slow, the consensus guard steps back
    // towards denser messages, and a rank that compressed before the drop
    // (rank 1 at 1/2 here) may be back at that ratio.)
    const Decision during = ds[recover - 1];
    EXPECT_LT(during.dropped_link_Bps, before.dropped_link_Bps / 10) << "rank " << rank;
    EXPECT_TRUE(during.ratio < 1 || during.period > 1)
        << "rank " << rank << ": ratio " << during.ratio << " H " << during.period;
    std::size_t relaxed = recover;
    while (relaxed < ds.size() && (ds[relaxed].ratio < before.ratio || ds[relaxed].period > before.period)) ++relaxed;
    EXPECT_LE(relaxed - recover, 20U) << "rank " << rank << " ratio " << during.ratio << " H " << during.period
                                      << " during the drop, " << before.ratio << " H " << before.period << " before";
    // The rounds docs/scheduler-results.md quotes.
    std::string while_slow;
    for (std::size_t i = reacted; i < recover && i < ds.size(); ++i)
      if (i == reacted || ds[i].ratio != ds[i - 1].ratio || ds[i].period != ds[i - 1].period)
        while_slow += " " + std::to_string(ds[i].round) + ":" + std::to_string(ds[i].ratio).substr(0, 6) + "/H" +
                      std::to_string(ds[i].period);
    std::printf("rank %d while slow:%s\n", rank, while_slow.c_str());
    const Decision& at_reaction = ds[std::min(reacted, ds.size() - 1)];
    const Decision& at_return = ds[std::min(relaxed, ds.size() - 1)];
    std::printf(
        "rank %d: drop after round %zu: %s at round %zu (ratio %g H %d); recovery after round %zu: "
        "back at round %zu (ratio %g H %d)\n",
        rank, drop, reacted < ds.size() ? "reacted" : "never", reacted, at_reaction.ratio, at_reaction.period, recover,
        relaxed, at_return.ratio, at_return.period);
    // And it stays near there: the link is as fast as before. (At this
    // budget's edge the ratio moves between neighbouring rungs: measured
    // times cross the hysteresis band, and a held one-size link explores.)
    std::vector<double> late;
    for (std::size_t i = ds.size() - 100; i < ds.size(); ++i) late.push_back(ds[i].ratio);
    std::nth_element(late.begin(), late.begin() + 50, late.end());
    EXPECT_GE(late[50], before.ratio / 2) << "rank " << rank;
  }
  // The drop cost time, but less than gossiping dense through it.
  const double adaptive = last_.virtual_seconds;
  run("fixed", 1.0);
  EXPECT_LT(adaptive, last_.virtual_seconds);
}

// Agreed decisions every 5 steps: the drop is answered between them by a
// reaction on both ends of the link (ScheduleController -> AdaptivePolicy::
// react), not at the next agreed decision.
TEST_F(SchedulerLinkDrop, BetweenAgreementsBothEndsReactToTheDrop) {
  const auto decisions = run("adaptive", 0.01, 5);
  EXPECT_GT(last_.schedule_reactions, 0);
  for (int rank : {0, 1}) {
    const auto& ds = decisions.at(rank);
    const std::size_t drop = first_after(ds, kDrop);
    ASSERT_GT(drop, 0U);
    ASSERT_LT(drop, ds.size());
    const double before = ds[drop - 1].ratio;
    const auto lowered = std::find_if(ds.begin() + static_cast<std::ptrdiff_t>(drop), ds.end(),
                                      [&](const Decision& d) { return d.ratio < before; });
    ASSERT_NE(lowered, ds.end()) << "rank " << rank << " never compressed after the drop";
    EXPECT_FALSE(lowered->agreed) << "rank " << rank << ": first lowered at an agreed decision, round "
                                  << lowered->round;
    EXPECT_LT(lowered->time_s, kRecover) << "rank " << rank;
  }
}

}  // namespace
}  // namespace murmur::sim::runtime
