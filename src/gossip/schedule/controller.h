// ScheduleController: runs the adaptive policy (policy.h) against one
// running Algorithm. It is the integration of the scheduler's parts:
//
//   every step      on_step(compute seconds) feeds the ComputeEstimator
//   every interval  the algorithm's timed sends feed one LinkEstimator per
//                   peer; the inputs (links, compute per step, message cost,
//                   the consensus signal below) go to
//                   propose_period; `gather` brings every rank's proposal
//                   (period wish, consensus signal, least aggressive or
//                   not) to every rank; the
//                   maximum period is agreed; decide() picks the ratios;
//                   Algorithm::retune applies both from the next step on;
//                   `record` receives the decision with its measurements.
//   every round     inside Algorithm::step, once the previous round has
//                   completed and before the next one's message is made
//                   (Algorithm::set_before_round): the sends feed the
//                   estimators (with receipts, those whose receipt has
//                   arrived; a slow round's usually arrives after this
//                   hook, so it counts before the round after next),
//                   and when a link is over budget at the ratio
//                   in use, or it has a suspected slowdown pending
//                   (LinkEstimate::suspect_bandwidth_Bps, counted at once),
//                   the policy reacts (AdaptivePolicy::react: ratios at the
//                   agreed period, no gather, no guard step) for the round
//                   about to start; such a decision is applied and
//                   recorded like the others, with "agreed": false.
//
// All ranks must call on_step() the same number of times and with the same
// interval, because gather is a collective and the agreed period must
// change at the same step everywhere (rounds pair up across ranks).
//
// The consensus signal is the mixing RMS over the local progress per step
// (Algorithm::last_mixing_rms / last_local_step_rms): both grow with the
// learning rate, their quotient does not. The guard compares this rank's
// signal with a reference measured on other ranks at nearly the same time:
// the mean signal of the ranks that ran least aggressive (max ratio, min
// period) at a decision, learnt through the (lagged) gather and used from the
// next decision on, once
// guard_warmup_rounds decisions have passed. When no rank is least aggressive
// the last reference is kept; if there is none yet (every rank compressed or
// skipped from the start), the mean signal of all ranks after the warm-up
// becomes it, so that a drift growing from there still trips the guard. So
// a drift that every rank sees (the first rounds from identical models) is
// not blamed on compression or skipping; a reference frozen in the first
// rounds was (docs/scheduler.md). The signal also rises late in a run whose
// learning rate decays to zero (the models' distance was built by earlier,
// larger steps), which a reference kept from mid-run can take for drift.
//
// Blocking: on_step blocks in gather at each interval (a lagged gather only
// while some rank is more than an interval behind). Threads: the
// caller's thread only (the one that drives the algorithm).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "gossip/algorithm/algorithm.h"
#include "gossip/schedule/compute_estimator.h"
#include "gossip/schedule/link_estimator.h"
#include "gossip/schedule/policy.h"
#include "gossip/schedule/schedule_file.h"

namespace murmur::gossip::schedule {

// What each rank contributes to a decision.
struct ScheduleProposal {
  int period = 1;                 // propose_period's wish
  double consensus = -1;          // this rank's consensus signal; < 0: not measured
  bool least_aggressive = false;  // running max_ratio at min_period
};

// The agreed period (the maximum wish, a larger one only adds budget), the
// guard's reference (the mean signal of the least aggressive ranks that
// measured one; -1 when none did) and the mean signal of all ranks that
// measured one (-1: none). Pure: the same on every rank.
struct ScheduleAgreement {
  int period = 1;
  double reference = -1;
  double overall = -1;
};
ScheduleAgreement agree(const std::vector<ScheduleProposal>& proposals);

class ScheduleController {
 public:
  // Collective: publishes this rank's proposal and returns every rank's, in
  // rank order, the same vector on every rank. It may lag by one call (the
  // proposals of the previous decision: peer/api/schedule_agreement.h), so that
  // agreeing is not a barrier every interval; the agreed period then applies
  // one interval after it was wished for, still at the same step everywhere.
  using Gather = std::function<std::vector<ScheduleProposal>(const ScheduleProposal& mine)>;
  using Record = std::function<void(const nlohmann::json& decision)>;

  // `algorithm` must outlive the controller, which installs itself as its
  // before-round hook until destroyed. `interval_steps` >= 1.
  ScheduleController(const ScheduleConfig& config, Algorithm& algorithm, std::size_t parameters, int interval_steps,
                     Gather gather, Record record);
  ~ScheduleController();
  ScheduleController(const ScheduleController&) = delete;
  ScheduleController& operator=(const ScheduleController&) = delete;

  void on_step(double compute_seconds);

  // The last decision (nullopt before the first).
  const std::optional<ScheduleDecision>& last_decision() const { return last_; }
  double current_ratio() const { return ratio_; }

 private:
  ScheduleInputs gather_inputs();
  // The before-round hook: a reaction between agreements, if one is due.
  void react_before_round();
  void update_reference(const ScheduleAgreement& agreed);
  // Retunes the algorithm, logs a change, records the decision (with
  // "agreed": false for a reaction between agreements) and keeps it.
  void apply(ScheduleDecision decision, const ScheduleInputs& in, bool agreed);

  const ScheduleConfig config_;
  Algorithm& algorithm_;
  const std::size_t parameters_;
  const int interval_steps_;
  Gather gather_;
  Record record_;
  AdaptivePolicy policy_;
  ComputeEstimator compute_;
  std::map<int, LinkEstimator> links_;  // by peer
  std::uint64_t steps_ = 0;
  std::uint64_t decisions_ = 0;
  double ratio_;
  double observed_message_bytes_ = 0;  // mean size of the sends of the last drain with any
  // Mean consensus signal of the least aggressive ranks at the last
  // decision that had any (or of all ranks, see above); -1 before.
  double reference_ = -1;
  std::optional<ScheduleDecision> last_;
};

}  // namespace murmur::gossip::schedule
