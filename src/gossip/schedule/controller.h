// ScheduleController: runs the adaptive policy (policy.h) against one
// running Algorithm. It is the integration of the scheduler's parts:
//
//   every step      on_step(compute seconds) feeds the ComputeEstimator
//   every interval  the algorithm's timed sends feed one LinkEstimator per
//                   peer; the inputs (links, compute per step, message cost,
//                   the algorithm's mixing RMS as the consensus signal) go to
//                   propose_period; `agree_max` turns the proposals of all
//                   ranks into one period; decide() picks the ratios;
//                   Algorithm::retune applies both from the next step on;
//                   `record` receives the decision with its measurements.
//
// All ranks must call on_step() the same number of times and with the same
// interval, because agree_max is a collective and the agreed period must
// change at the same step everywhere (rounds pair up across ranks).
//
// The consensus reference is the mixing RMS measured while the schedule was
// least aggressive (max ratio, min period), so the guard compares the drift
// under compression and skipping with the drift gossip alone leaves.
//
// Blocking: on_step blocks in agree_max at each interval. Threads: the
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

class ScheduleController {
 public:
  // Blocking collective: the maximum of every rank's proposal.
  using AgreeMax = std::function<int(int proposal)>;
  using Record = std::function<void(const nlohmann::json& decision)>;

  // `algorithm` must outlive the controller. `interval_steps` >= 1.
  ScheduleController(const ScheduleConfig& config, Algorithm& algorithm, std::size_t parameters, int interval_steps,
                     AgreeMax agree_max, Record record);

  void on_step(double compute_seconds);

  // The last decision (nullopt before the first).
  const std::optional<ScheduleDecision>& last_decision() const { return last_; }
  double current_ratio() const { return ratio_; }

 private:
  ScheduleInputs gather_inputs();

  const ScheduleConfig config_;
  Algorithm& algorithm_;
  const std::size_t parameters_;
  const int interval_steps_;
  AgreeMax agree_max_;
  Record record_;
  AdaptivePolicy policy_;
  ComputeEstimator compute_;
  std::map<int, LinkEstimator> links_;  // by peer
  std::uint64_t steps_ = 0;
  std::uint64_t decisions_ = 0;
  double ratio_;
  double observed_message_bytes_ = 0;  // mean of the last interval's sends
  double reference_ = -1;              // mixing RMS under the least aggressive setting
  std::optional<ScheduleDecision> last_;
};

}  // namespace murmur::gossip::schedule
