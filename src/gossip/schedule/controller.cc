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

ScheduleAgreement agree(const std::vector<ScheduleProposal>& proposals) {
  ScheduleAgreement a;
  double least_sum = 0, all_sum = 0;
  int least = 0, all = 0;
  for (const ScheduleProposal& p : proposals) {
    a.period = std::max(a.period, p.period);
    if (p.consensus <= 0) continue;
    all_sum += p.consensus;
    ++all;
    if (p.least_aggressive) {
      least_sum += p.consensus;
      ++least;
    }
  }
  if (least > 0) a.reference = least_sum / least;
  if (all > 0) a.overall = all_sum / all;
  return a;
}

ScheduleController::ScheduleController(const ScheduleConfig& config, Algorithm& algorithm, std::size_t parameters,
                                       int interval_steps, Gather gather, Record record)
    : config_(config),
      algorithm_(algorithm),
      parameters_(parameters),
      interval_steps_(interval_steps),
      gather_(std::move(gather)),
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
  algorithm_.set_before_round([this] { react_before_round(); });
}

ScheduleController::~ScheduleController() { algorithm_.set_before_round({}); }

void ScheduleController::react_before_round() {
  // Reactions start with the first agreed decision (the budget needs the
  // agreed period) and happen between agreements: a round is not retuned
  // twice, and the agreed ratios after on_step are the policy's own.
  if (!last_) return;
  const auto in = gather_inputs();
  if (auto decision = policy_.react(in)) apply(std::move(*decision), in, /*agreed=*/false);
}

ScheduleInputs ScheduleController::gather_inputs() {
  double bytes = 0;
  std::size_t messages = 0;
  for (const auto& s : algorithm_.take_transfer_samples()) {
    auto it = links_.try_emplace(s.peer, config_.link).first;
    if (s.receiver_seconds >= 0) {
      it->second.observe_with_receipt(s.bytes, s.seconds, s.receiver_seconds, s.end_time);
    } else {
      it->second.observe(s.bytes, s.seconds, s.end_time);
    }
    bytes += s.bytes;
    ++messages;
  }
  if (messages > 0) observed_message_bytes_ = bytes / static_cast<double>(messages);

  ScheduleInputs in;
  in.round = decisions_;
  for (const auto& [peer, estimator] : links_) {
    const auto e = estimator.estimate();
    LinkView view{peer, e.latency_s, e.bandwidth_known() ? e.bandwidth_Bps : 0.0, e.samples, e.line_identified};
    view.late_receiver = e.late_receiver;
    // Fast attack: a transfer far slower than the estimate counts at once
    // (a drop is paid for every round until the estimator confirms it);
    // a faster one waits for confirmation (slow release).
    if (e.suspect_bandwidth_Bps > 0 && (view.bandwidth_Bps <= 0 || e.suspect_bandwidth_Bps < view.bandwidth_Bps)) {
      view.bandwidth_Bps = e.suspect_bandwidth_Bps;
      view.suspect = true;
    }
    in.links.push_back(view);
  }
  in.compute_s_per_step = compute_.seconds_per_step();
  in.parameters = parameters_;
  in.per_link = false;  // the tunable algorithms send one message to all neighbours
  if (!algorithm_.tunes_ratio() && observed_message_bytes_ > 0 && parameters_ > 0) {
    // A fixed encoding (dense, sign, qsgd): its measured size per value.
    in.bytes_per_dense_value = std::max(1e-3, (observed_message_bytes_ - in.header_bytes) / parameters_);
  }
  // Mixing over local progress per step: a drift between the models that
  // grows with the learning rate (its warm-up) is not one that compression
  // or skipping caused. Unmeasured (-1) until both are known.
  const double local = algorithm_.last_local_step_rms();
  in.consensus_distance = local > 0 ? algorithm_.last_mixing_rms() / local : -1;
  in.consensus_reference = reference_;
  return in;
}

void ScheduleController::on_step(double compute_seconds) {
  compute_.observe(compute_seconds);
  // Between agreements the before-round hook reacts (docs/scheduler.md, rule 6),
  // so a drop costs a round, not an interval of them.
  if (++steps_ % static_cast<std::uint64_t>(interval_steps_) != 0) return;
  const auto in = gather_inputs();
  ScheduleProposal mine;
  mine.period = policy_.propose_period(in);
  mine.consensus = in.consensus_distance;
  mine.least_aggressive = ratio_ >= policy_.bounds().max_ratio && algorithm_.period() <= policy_.bounds().min_period;
  const auto proposals = gather_(mine);
  MURMUR_CHECK(!proposals.empty());
  const ScheduleAgreement agreed = agree(proposals);
  const int period = std::clamp(agreed.period, policy_.bounds().min_period, policy_.bounds().max_period);
  auto decision = policy_.decide(in, period);
  ++decisions_;
  update_reference(agreed);
  apply(std::move(decision), in, /*agreed=*/true);
}

void ScheduleController::update_reference(const ScheduleAgreement& agreed) {
  // For the next decision: the signal was measured before this one applies.
  // Not in the first decisions: models that start identical drift apart
  // for a while whatever the setting, and a reference taken then would
  // make every later drift look like the compression's.
  if (decisions_ > static_cast<std::uint64_t>(config_.guard_warmup_rounds)) {
    if (agreed.reference > 0) {
      reference_ = agreed.reference;
    } else if (reference_ < 0 && agreed.overall > 0) {
      // Nobody least aggressive since the warm-up: the drift under the
      // settings in force then is the baseline.
      reference_ = agreed.overall;
    }
  }
}

void ScheduleController::apply(ScheduleDecision decision, const ScheduleInputs& in, bool agreed) {
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
    j["agreed"] = agreed;
    record_(j);
  }
  last_ = std::move(decision);
}

namespace {
constexpr std::uint32_t kScheduleStateVersion = 1;
}

std::string ScheduleController::save_state() const {
  StateWriter w("schedule", parameters_, kScheduleStateVersion);
  w.u64(steps_);
  w.u64(decisions_);
  w.f64(ratio_);
  w.f64(observed_message_bytes_);
  w.f64(reference_);
  policy_.save(w);
  compute_.save(w);
  w.u64(links_.size());
  for (const auto& [peer, estimator] : links_) {
    w.u64(static_cast<std::uint64_t>(peer));
    estimator.save(w);
  }
  w.u64(last_ ? 1 : 0);
  if (last_) {
    w.u64(last_->round);
    w.i64(last_->period);
    w.i64(last_->proposed_period);
    w.f64(last_->ratio);
    std::vector<double> links;
    for (const auto& [peer, ratio] : last_->link_ratio) {
      links.push_back(peer);
      links.push_back(ratio);
    }
    w.doubles(links);
  }
  return w.take();
}

void ScheduleController::read_state(std::string_view state, AdaptivePolicy& policy, ComputeEstimator& compute,
                                    std::map<int, LinkEstimator>& links, bool commit) {
  StateReader r(state, "schedule", kScheduleStateVersion);
  if (r.elements() != parameters_)
    throw std::invalid_argument("saved state of schedule: for " + std::to_string(r.elements()) +
                                " parameters, this job has " + std::to_string(parameters_));
  const std::uint64_t steps = r.u64("steps");
  const std::uint64_t decisions = r.u64("decisions");
  const double ratio = r.f64("ratio");
  const double message_bytes = r.f64("observed message bytes");
  const double reference = r.f64("consensus reference");
  const auto& b = policy_.bounds();
  if (!(ratio >= b.min_ratio && ratio <= b.max_ratio))
    throw std::invalid_argument("saved state of schedule: ratio " + std::to_string(ratio) + " outside [" +
                                std::to_string(b.min_ratio) + ", " + std::to_string(b.max_ratio) + "]");
  policy.load(r);
  compute.load(r);
  const std::uint64_t count = r.u64("links");
  links.clear();
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t peer = r.u64("link peer");
    if (peer > 1'000'000) throw std::invalid_argument("saved state of schedule: link to peer " + std::to_string(peer));
    links.try_emplace(static_cast<int>(peer), config_.link).first->second.load(r);
  }
  std::optional<ScheduleDecision> last;
  if (r.u64("has a decision") != 0) {
    ScheduleDecision d;
    d.round = r.u64("decision round");
    d.period = static_cast<int>(r.i64("decision period"));
    d.proposed_period = static_cast<int>(r.i64("decision proposed period"));
    d.ratio = r.f64("decision ratio");
    const auto by_link = r.doubles("decision link ratios");
    if (by_link.size() % 2 != 0 || d.period < b.min_period || d.period > b.max_period ||
        !(d.ratio >= b.min_ratio && d.ratio <= b.max_ratio))
      throw std::invalid_argument("saved state of schedule: decision (period " + std::to_string(d.period) + ", ratio " +
                                  std::to_string(d.ratio) + ") outside this job's bounds");
    for (std::size_t i = 0; i < by_link.size(); i += 2) d.link_ratio[static_cast<int>(by_link[i])] = by_link[i + 1];
    d.reason = "restored from a checkpoint";
    last = std::move(d);
  }
  r.finish();
  if (!commit) return;
  steps_ = steps;
  decisions_ = decisions;
  ratio_ = ratio;
  observed_message_bytes_ = message_bytes;
  reference_ = reference;
  last_ = std::move(last);
}

void ScheduleController::load_state(std::string_view state) {
  {
    // Everything checked on copies first: a blob refused changes nothing.
    AdaptivePolicy policy = policy_;
    ComputeEstimator compute = compute_;
    std::map<int, LinkEstimator> links;
    read_state(state, policy, compute, links, /*commit=*/false);
  }
  read_state(state, policy_, compute_, links_, /*commit=*/true);
  Tuning tuning;
  tuning.period = last_ ? last_->period : policy_.bounds().min_period;
  if (algorithm_.tunes_ratio()) tuning.ratio = ratio_;
  algorithm_.retune(tuning);
  sched_log().info("schedule restored: period {}, ratio {:g}, {} decisions, {} links", tuning.period, ratio_,
                   decisions_, links_.size());
}

}  // namespace murmur::gossip::schedule
