#include "gossip/schedule/controller.h"

#include <algorithm>

#include "common/check.h"
#include "common/log.h"
#include "gossip/schedule/decision_record.h"

namespace murmur::gossip::schedule {

namespace {

ScheduleBounds bounds_for(const ScheduleConfig& config, const Algorithm& algorithm) {
  ScheduleBounds b = config.bounds;
  // An algorithm whose ratio cannot move is scheduled on its period alone.
  if (!algorithm.tunes_ratio()) b.min_ratio = b.max_ratio = 1.0;
  if (!algorithm.tunes_period()) b.min_period = b.max_period = algorithm.period();
  return b;
}

}  // namespace

ScheduleController::ScheduleController(const ScheduleConfig& config, Algorithm& algorithm, std::size_t parameters,
                                       int interval_steps, AgreeMax agree_max, Record record)
    : config_(config),
      algorithm_(algorithm),
      parameters_(parameters),
      interval_steps_(interval_steps),
      agree_max_(std::move(agree_max)),
      record_(std::move(record)),
      policy_(bounds_for(config, algorithm)),
      compute_(config.compute_window),
      ratio_(policy_.bounds().max_ratio) {
  MURMUR_CHECK_GE(interval_steps_, 1);
  // Start least aggressive: full ratio at the smallest period, then let the
  // measurements argue for more compression or skipping.
  Tuning start;
  start.period = policy_.bounds().min_period;
  if (algorithm_.tunes_ratio()) start.ratio = ratio_;
  algorithm_.retune(start);
}

ScheduleInputs ScheduleController::gather_inputs() {
  double bytes = 0;
  std::size_t messages = 0;
  for (const auto& s : algorithm_.take_transfer_samples()) {
    auto it = links_.try_emplace(s.peer, config_.link).first;
    it->second.observe(s.bytes, s.seconds, s.end_time);
    bytes += s.bytes;
    ++messages;
  }
  if (messages > 0) observed_message_bytes_ = bytes / static_cast<double>(messages);

  ScheduleInputs in;
  in.round = decisions_;
  for (const auto& [peer, estimator] : links_) {
    const auto e = estimator.estimate();
    in.links.push_back(
        {peer, e.latency_s, e.bandwidth_known() ? e.bandwidth_Bps : 0.0, e.samples, e.line_identified});
  }
  in.compute_s_per_step = compute_.seconds_per_step();
  in.parameters = parameters_;
  in.per_link = false;  // the tunable algorithms send one message to all neighbours
  if (!algorithm_.tunes_ratio() && observed_message_bytes_ > 0 && parameters_ > 0) {
    // A fixed encoding (dense, sign, qsgd): its measured size per value.
    in.bytes_per_dense_value = std::max(1e-3, (observed_message_bytes_ - in.header_bytes) / parameters_);
  }
  in.consensus_distance = algorithm_.last_mixing_rms();
  in.consensus_reference = reference_;
  return in;
}

void ScheduleController::on_step(double compute_seconds) {
  compute_.observe(compute_seconds);
  if (++steps_ % static_cast<std::uint64_t>(interval_steps_) != 0) return;
  const auto in = gather_inputs();
  const int proposal = policy_.propose_period(in);
  const int agreed = std::clamp(agree_max_(proposal), policy_.bounds().min_period, policy_.bounds().max_period);
  auto decision = policy_.decide(in, agreed);
  ++decisions_;

  const bool least_aggressive = decision.ratio >= policy_.bounds().max_ratio && decision.period <= policy_.bounds().min_period;
  if (least_aggressive && in.consensus_distance > 0) {
    reference_ = reference_ < 0 ? in.consensus_distance : 0.8 * reference_ + 0.2 * in.consensus_distance;
  }
  Tuning tuning;
  tuning.period = decision.period;
  if (algorithm_.tunes_ratio()) {
    tuning.ratio = decision.ratio;
    tuning.trial_ratio = decision.explore_ratio;
  }
  algorithm_.retune(tuning);
  ratio_ = decision.ratio;
  if (decision.changed) {
    sched_log().info("round {}: period {}, ratio {:g}: {}", decision.round, decision.period, decision.ratio,
                     decision.reason);
  }
  if (record_) {
    auto j = to_json(decision, in);
    j["step"] = steps_;
    record_(j);
  }
  last_ = std::move(decision);
}

}  // namespace murmur::gossip::schedule
