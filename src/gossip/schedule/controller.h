// ScheduleController: runs the adaptive policy (policy.h) against one
// running Algorithm: the integration of the scheduler's parts.
//
//   ScheduleController c(config, algorithm, parameters, interval, gather, record);
//   for (...) { local_step(x); algorithm.step(x); c.on_step(local_step's seconds); }
//
// What it does, in one paragraph: every step feeds the ComputeEstimator;
// every `interval_steps` steps it drains the algorithm's timed sends into one
// LinkEstimator per peer, proposes a period, `gather`s every rank's
// proposal, agrees on the maximum period (agree()), decides the ratios and
// retunes the algorithm from the next step on; before every round (the
// algorithm's before-round hook) it drains the sends again and lets the
// policy react() when a link is over budget (with hysteresis) at the ratio
// in use, planning a link with a pending slower suspect at the suspect's
// bandwidth (the suspect alone does not trigger a reaction). It starts
// least aggressive (max_ratio, min_period). The cycle, the lagged agreement
// and the consensus guard's input with its measured limits are
// docs/scheduler.md, "Integration (as built)"; this header states only what
// a caller must respect.
//
// Collective: all ranks must call on_step() the same number of times and
// with the same interval, because gather is a collective and the agreed
// period must change at the same step everywhere (rounds pair up across
// ranks).
// Records: every decision, agreed or a reaction between agreements, is
// applied and passed to `record` if set (decision_record.h JSON plus "step" and
// "agreed"; false for a reaction). A reaction that changes nothing is
// neither applied nor recorded.
// Consensus guard input: this rank's signal is last_mixing_rms /
// last_local_step_rms (-1 until both are measured); its reference is the
// mean signal of the ranks that ran least aggressive at a decision, learnt
// through `gather` and used from the next decision on, taken only after
// guard_warmup_rounds decisions; with no such rank the last reference is
// kept, and with none yet the mean signal of all ranks becomes it. The
// reference is the same on every rank, the signal is not (policy.h).
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
#include <string>
#include <string_view>

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

  // Checkpoints: the link estimators, the compute estimator, the policy's
  // memory and the current decision (period, ratios), with the counters
  // that keep decisions at the same steps on every rank, as a state blob
  // (state_blob.h, name "schedule", elements: the parameters). Caller
  // thread, between steps. load_state() applies the saved decision to the
  // algorithm at once (retune), so the first steps run as the saved job
  // did; it throws std::invalid_argument naming what does not fit (another
  // owner, another parameter count, bounds that the saved state breaks, a
  // malformed blob) and then changes nothing. Call it before the first
  // step, after the algorithm's own load_state.
  std::string save_state() const;
  void load_state(std::string_view state);

 private:
  ScheduleInputs gather_inputs();
  // The before-round hook: a reaction between agreements, if one is due.
  void react_before_round();
  void update_reference(const ScheduleAgreement& agreed);
  // Retunes the algorithm, logs a change, records the decision (with
  // "agreed": false for a reaction between agreements) and keeps it.
  void apply(ScheduleDecision decision, const ScheduleInputs& in, bool agreed);
  // Reads `state` into the given parts (checks everything first when they
  // are copies; load_state then reads it again into the members).
  void read_state(std::string_view state, AdaptivePolicy& policy, ComputeEstimator& compute,
                  std::map<int, LinkEstimator>& links, bool commit);

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
