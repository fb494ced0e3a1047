#include "gossip/schedule/policy.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "common/check.h"
#include "gossip/schedule/ratio_ladder.h"

namespace murmur::gossip::schedule {

void check_bounds(const ScheduleBounds& b) {
  MURMUR_CHECK(b.min_ratio > 0 && b.min_ratio <= b.max_ratio && b.max_ratio <= 1);
  MURMUR_CHECK(b.min_period >= 1 && b.min_period <= b.max_period);
  MURMUR_CHECK(b.consensus_guard == 0 || b.consensus_guard >= 1);
  MURMUR_CHECK(b.budget_fraction > 0 && b.budget_fraction <= 1);
  MURMUR_CHECK(b.hysteresis >= 0 && b.hysteresis < 1);
  MURMUR_CHECK_GE(b.guard_cooldown_rounds, 1);
  MURMUR_CHECK_GE(b.guard_release_rounds, 1);
  MURMUR_CHECK_GE(b.explore_rounds, 0);
}

double message_bytes(const ScheduleInputs& in, double ratio) {
  const double n = static_cast<double>(in.parameters);
  const double sparse = std::ceil(ratio * n) * in.bytes_per_kept_value;
  return in.header_bytes + std::min(sparse, n * in.bytes_per_dense_value);
}

double link_seconds(const ScheduleInputs& in, const LinkView& link, double ratio) {
  const double transfer = link.bandwidth_Bps > 0 ? message_bytes(in, ratio) / link.bandwidth_Bps : 0.0;
  return link.latency_s + transfer;
}

namespace {

void check_inputs(const ScheduleInputs& in) {
  MURMUR_CHECK(std::isfinite(in.compute_s_per_step));
  MURMUR_CHECK(in.bytes_per_kept_value > 0 && in.bytes_per_dense_value > 0 && in.header_bytes >= 0);
  std::set<int> peers;
  for (const LinkView& l : in.links) {
    MURMUR_CHECK(std::isfinite(l.latency_s) && std::isfinite(l.bandwidth_Bps));
    MURMUR_CHECK_GE(l.latency_s, 0.0);
    MURMUR_CHECK(peers.insert(l.peer).second);  // one view per peer
  }
}

std::string seconds(double s) { return fmt::format("{:.3g} s", s); }

void append(std::string& to, const std::string& what) {
  if (what.empty()) return;
  if (!to.empty()) to += "; ";
  to += what;
}

}  // namespace

AdaptivePolicy::AdaptivePolicy(const ScheduleBounds& bounds)
    : bounds_((check_bounds(bounds), bounds)),
      ladder_(ratio_ladder(bounds.min_ratio, bounds.max_ratio)),
      floor_rung_(ladder_.size() - 1),
      period_cap_(bounds.max_period),
      period_(bounds.min_period),
      rounds_since_step_back_(static_cast<std::uint64_t>(bounds.guard_cooldown_rounds)) {}

std::size_t AdaptivePolicy::most_aggressive_rung_in_use() const {
  std::size_t r = 0;
  for (const auto& [peer, rung] : link_rung_) r = std::max(r, rung);
  return std::min(r, floor_rung_);
}

void AdaptivePolicy::update_guard(const ScheduleInputs& in) {
  stepped_back_ = false;
  guard_note_.clear();
  ++rounds_since_step_back_;
  if (bounds_.consensus_guard == 0) return;
  const bool measured = in.consensus_distance >= 0 && in.consensus_reference > 0;
  if (measured && in.consensus_distance > bounds_.consensus_guard * in.consensus_reference) {
    calm_rounds_ = 0;
    const std::string why = fmt::format("guard: consensus distance {:.3g} > {} x reference {:.3g}",
                                        in.consensus_distance, bounds_.consensus_guard, in.consensus_reference);
    if (rounds_since_step_back_ < static_cast<std::uint64_t>(bounds_.guard_cooldown_rounds)) {
      guard_note_ = why + ", stepped back " + std::to_string(rounds_since_step_back_) + " rounds ago: waiting";
      return;
    }
    // A step back never trades one kind of aggressiveness for the other:
    // halving the period holds the ratios where they are, and raising the
    // floor ratio holds the period (else the period rule would raise H to
    // pay for the larger messages).
    const std::size_t in_use = most_aggressive_rung_in_use();
    if (period_ > bounds_.min_period) {
      period_cap_ = std::max(bounds_.min_period, period_ / 2);
      floor_rung_ = in_use;
      guard_note_ = fmt::format("{}: step back, period cap {}, floor ratio held at {:.4g}", why, period_cap_,
                                ladder_[floor_rung_]);
    } else if (in_use > 0) {
      period_cap_ = period_;
      floor_rung_ = in_use - 1;
      guard_note_ = fmt::format("{}: step back, floor ratio {:.4g}, period cap held at {}", why, ladder_[floor_rung_],
                                period_cap_);
    } else {
      guard_note_ = why + ": already least aggressive, nothing to step back";
      return;
    }
    stepped_back_ = true;
    rounds_since_step_back_ = 0;
    return;
  }
  // Rounds without a measurement count as calm: the guard can only hold the
  // policy back on evidence.
  if (++calm_rounds_ < bounds_.guard_release_rounds) return;
  calm_rounds_ = 0;
  if (floor_rung_ + 1 < ladder_.size()) {
    ++floor_rung_;
    guard_note_ = fmt::format("guard: {} calm rounds, floor ratio released to {:.4g}", bounds_.guard_release_rounds,
                              ladder_[floor_rung_]);
  } else if (period_cap_ < bounds_.max_period) {
    period_cap_ = std::min(bounds_.max_period, period_cap_ * 2);
    guard_note_ =
        fmt::format("guard: {} calm rounds, period cap released to {}", bounds_.guard_release_rounds, period_cap_);
  }
}

double AdaptivePolicy::slowest_at_floor(const ScheduleInputs& in) const {
  double slowest = -1;
  for (const LinkView& l : in.links)
    if (l.bandwidth_Bps > 0) slowest = std::max(slowest, link_seconds(in, l, ladder_[floor_rung_]));
  return slowest;
}

int AdaptivePolicy::propose_period(const ScheduleInputs& in) {
  MURMUR_CHECK(!proposed_);  // one propose_period per decide
  check_inputs(in);
  update_guard(in);
  period_note_.clear();
  const double per_step = bounds_.budget_fraction * in.compute_s_per_step;
  const double slowest = slowest_at_floor(in);
  const int held = std::min(period_, period_cap_);
  int wish = held;
  if (in.compute_s_per_step <= 0 || slowest < 0) {
    period_note_ = fmt::format("no {} estimate yet: period {}", in.compute_s_per_step <= 0 ? "compute" : "link", held);
  } else {
    // Smallest period whose budget, scaled by `margin`, holds the slowest link
    // at the floor ratio; 0 when none up to the cap does.
    auto need = [&](double margin) {
      for (int p = bounds_.min_period; p <= period_cap_; ++p)
        if (slowest <= p * per_step * margin) return p;
      return 0;
    };
    const int down = need(1 - bounds_.hysteresis);
    if (down != 0 && down < period_) {
      wish = down;
    } else if (period_ <= period_cap_ && slowest <= period_ * per_step * (1 + bounds_.hysteresis)) {
      wish = period_;
    } else {
      const int fit = need(1);
      wish = fit != 0 ? fit : period_cap_;
      if (fit == 0)
        period_note_ =
            fmt::format("slowest link at floor ratio {:.4g} needs {} > budget {} even at period {}",
                        ladder_[floor_rung_], seconds(slowest), seconds(period_cap_ * per_step), period_cap_);
    }
    if (wish != period_ && period_note_.empty())
      period_note_ = fmt::format("period {} -> {}: slowest link at floor ratio {:.4g} needs {}, budget {}", period_,
                                 wish, ladder_[floor_rung_], seconds(slowest), seconds(wish * per_step));
  }
  proposal_ = wish;
  proposed_ = true;
  return wish;
}

std::size_t AdaptivePolicy::choose_rung(const ScheduleInputs& in, const LinkView& link, double budget) const {
  const auto prev = link_rung_.find(link.peer);
  if (in.compute_s_per_step <= 0 || link.bandwidth_Bps <= 0)
    return prev == link_rung_.end() ? 0 : std::min(prev->second, floor_rung_);
  // Largest ratio fitting budget * margin; the floor when none does.
  auto first_fit = [&](double margin) {
    for (std::size_t k = 0; k < floor_rung_; ++k)
      if (link_seconds(in, link, ladder_[k]) <= budget * margin) return k;
    return floor_rung_;
  };
  if (prev != link_rung_.end() && prev->second <= floor_rung_) {
    const std::size_t up = first_fit(1 - bounds_.hysteresis);
    if (up < prev->second) return up;
    if (link_seconds(in, link, ladder_[prev->second]) <= budget * (1 + bounds_.hysteresis)) return prev->second;
  }
  return first_fit(1);
}

std::size_t AdaptivePolicy::maybe_explore(const ScheduleInputs& in, int key, std::size_t rung, bool one_size,
                                          std::string& note) {
  // Counted while the link stays one-size below max_ratio, whether or not
  // its rung moves: a link whose time is mostly per-message cost looks
  // slower the smaller its messages get (bytes / whole time), so its ratio
  // can slide down rung by rung without ever being held.
  int& decisions = held_one_size_[key];
  if (bounds_.explore_rounds == 0 || rung == 0 || !one_size) {
    decisions = 0;
    return rung;
  }
  if (++decisions < bounds_.explore_rounds) return rung;
  decisions = 0;
  // Twice the bytes (headers make one rung just short of it), or max_ratio.
  std::size_t target = rung - 1;
  while (target > 0 && message_bytes(in, ladder_[target]) < 2 * message_bytes(in, ladder_[rung])) --target;
  append(note, fmt::format("{}: explore ratio {:.4g} -> {:.4g} for one round "
                           "(measured at one message size for {} rounds)",
                           key < 0 ? std::string("shared ratio") : fmt::format("link {}", key), ladder_[rung],
                           ladder_[target], bounds_.explore_rounds));
  return target;
}

ScheduleDecision AdaptivePolicy::decide(const ScheduleInputs& in, int agreed_period) {
  return decide(in, agreed_period, /*explore=*/true);
}

std::optional<ScheduleDecision> AdaptivePolicy::react(const ScheduleInputs& in) {
  MURMUR_CHECK(!proposed_);  // not between propose_period and decide
  check_inputs(in);
  if (link_rung_.empty() || in.compute_s_per_step <= 0) return std::nullopt;
  const double budget = bounds_.budget_fraction * period_ * in.compute_s_per_step;
  const std::size_t shared = most_aggressive_rung_in_use();
  std::string over;
  for (const LinkView& l : in.links) {
    const auto it = link_rung_.find(l.peer);
    if (it == link_rung_.end() || l.bandwidth_Bps <= 0) continue;
    const double ratio = ladder_[in.per_link ? std::min(it->second, floor_rung_) : shared];
    const double t = link_seconds(in, l, ratio);
    if (t > budget * (1 + bounds_.hysteresis)) {
      over = fmt::format("between agreements: link {} needs {} at ratio {:.4g}, over budget {}", l.peer, seconds(t),
                         ratio, seconds(budget));
      break;
    }
  }
  if (over.empty()) return std::nullopt;
  stepped_back_ = false;
  guard_note_.clear();
  period_note_ = over;
  proposal_ = period_;
  proposed_ = true;
  ScheduleDecision d = decide(in, period_, /*explore=*/false);
  // At the floor (or held there by the guard) nothing can move: no decision.
  if (!d.changed) return std::nullopt;
  return d;
}

ScheduleDecision AdaptivePolicy::decide(const ScheduleInputs& in, int agreed_period, bool explore) {
  MURMUR_CHECK(proposed_);  // propose_period first, with the same inputs
  MURMUR_CHECK(agreed_period >= bounds_.min_period && agreed_period <= bounds_.max_period);
  proposed_ = false;
  ScheduleDecision d;
  d.round = in.round;
  d.period = agreed_period;
  d.proposed_period = proposal_;
  d.compute_budget_s = agreed_period * std::max(in.compute_s_per_step, 0.0);
  d.guard_stepped_back = stepped_back_;
  d.floor_ratio = ladder_[floor_rung_];
  d.period_cap = period_cap_;
  const double budget = bounds_.budget_fraction * d.compute_budget_s;

  std::string links_note;
  std::map<int, std::size_t> rungs;
  std::size_t uniform = 0;
  for (const LinkView& l : in.links) {
    const std::size_t k = choose_rung(in, l, budget);
    rungs[l.peer] = k;
    uniform = std::max(uniform, k);
  }
  std::string explore_note;
  const bool estimated = in.compute_s_per_step > 0;
  auto one_size = [&](const LinkView& l) { return estimated && l.bandwidth_Bps > 0 && !l.identified; };
  if (!explore) {
    // A reaction (docs/scheduler.md, rule 6) neither explores nor counts towards exploring.
  } else if (in.per_link) {
    for (const LinkView& l : in.links) {
      const std::size_t trial = maybe_explore(in, l.peer, rungs[l.peer], one_size(l), explore_note);
      if (trial != rungs[l.peer]) d.explore_link_ratio[l.peer] = ladder_[trial];
    }
  } else if (!in.links.empty()) {
    // The shared ratio explores when a link that sets it cannot tell.
    bool setter_one_size = false;
    for (const LinkView& l : in.links) setter_one_size |= rungs[l.peer] == uniform && one_size(l);
    const std::size_t trial = maybe_explore(in, -1, uniform, setter_one_size, explore_note);
    if (trial != uniform) d.explore_ratio = ladder_[trial];
  }
  for (const LinkView& l : in.links) {
    const std::size_t k = in.per_link ? rungs[l.peer] : uniform;
    d.link_ratio[l.peer] = ladder_[k];
    const double t = link_seconds(in, l, ladder_[k]);
    d.link_predicted_s[l.peer] = t;
    d.predicted_comm_s = std::max(d.predicted_comm_s, t);
    const auto prev = link_rung_.find(l.peer);
    const bool moved = prev == link_rung_.end() || prev->second != rungs[l.peer];
    if (l.bandwidth_Bps <= 0 || in.compute_s_per_step <= 0) {
      if (prev == link_rung_.end())
        append(links_note, fmt::format("link {}: no estimate, ratio {:.4g}", l.peer, ladder_[rungs[l.peer]]));
    } else if (moved) {
      append(links_note,
             fmt::format("link {}: ratio {} -> {:.4g} ({} at {:.3g} MB/s + {} latency, budget {})", l.peer,
                         prev == link_rung_.end() ? std::string("none") : fmt::format("{:.4g}", ladder_[prev->second]),
                         ladder_[rungs[l.peer]], seconds(link_seconds(in, l, ladder_[rungs[l.peer]])),
                         l.bandwidth_Bps / 1e6, seconds(l.latency_s), seconds(budget)));
    }
  }
  d.ratio = in.links.empty() ? ladder_[0] : ladder_[uniform];

  d.changed = agreed_period != period_ || rungs != link_rung_ || !explore_note.empty();
  append(d.reason, guard_note_);
  append(d.reason, period_note_);
  if (agreed_period != proposal_)
    append(d.reason, fmt::format("agreed period {} (this rank proposed {})", agreed_period, proposal_));
  append(d.reason, links_note);
  append(d.reason, explore_note);
  if (in.compute_s_per_step > 0 && d.predicted_comm_s > budget)
    append(d.reason, fmt::format("comm {} exceeds budget {}: exposed", seconds(d.predicted_comm_s), seconds(budget)));
  if (d.reason.empty())
    d.reason = fmt::format("unchanged: slowest link {} within budget {}", seconds(d.predicted_comm_s), seconds(budget));

  period_ = agreed_period;
  link_rung_ = std::move(rungs);
  return d;
}

ScheduleDecision AdaptivePolicy::decide(const ScheduleInputs& in) { return decide(in, propose_period(in)); }

namespace {

template <typename Map>
std::vector<double> flatten(const Map& by_key) {
  std::vector<double> v;
  for (const auto& [key, value] : by_key) {
    v.push_back(key);
    v.push_back(static_cast<double>(value));
  }
  return v;
}

}  // namespace

void AdaptivePolicy::save(StateWriter& w) const {
  w.u64(ladder_.size());
  w.u64(floor_rung_);
  w.i64(period_cap_);
  w.i64(period_);
  w.doubles(flatten(link_rung_));
  w.doubles(flatten(held_one_size_));
  w.u64(rounds_since_step_back_);
  w.i64(calm_rounds_);
}

void AdaptivePolicy::load(StateReader& r) {
  const std::uint64_t rungs = r.u64("policy ladder size");
  const std::uint64_t floor = r.u64("policy floor rung");
  const std::int64_t cap = r.i64("policy period cap");
  const std::int64_t period = r.i64("policy period");
  const auto link_rung = r.doubles("policy link rungs");
  const auto held = r.doubles("policy links held at one size");
  const std::uint64_t since_step_back = r.u64("policy rounds since step back");
  const std::int64_t calm = r.i64("policy calm rounds");
  auto refuse = [](const std::string& what) {
    throw std::invalid_argument("saved state of schedule: " + what + " does not fit this job's schedule bounds");
  };
  if (rungs != ladder_.size())
    refuse("a ratio ladder of " + std::to_string(rungs) + " rungs (this one has " + std::to_string(ladder_.size()) +
           ")");
  if (floor >= rungs) refuse("floor rung " + std::to_string(floor));
  if (cap < bounds_.min_period || cap > bounds_.max_period) refuse("period cap " + std::to_string(cap));
  if (period < bounds_.min_period || period > bounds_.max_period) refuse("period " + std::to_string(period));
  if (link_rung.size() % 2 != 0 || held.size() % 2 != 0) refuse("an odd list of links");
  std::map<int, std::size_t> rung_by_link;
  for (std::size_t i = 0; i < link_rung.size(); i += 2) {
    if (!(link_rung[i + 1] >= 0 && link_rung[i + 1] < static_cast<double>(rungs))) refuse("a link rung");
    rung_by_link[static_cast<int>(link_rung[i])] = static_cast<std::size_t>(link_rung[i + 1]);
  }
  std::map<int, int> held_by_link;
  for (std::size_t i = 0; i < held.size(); i += 2)
    held_by_link[static_cast<int>(held[i])] = static_cast<int>(held[i + 1]);
  floor_rung_ = floor;
  period_cap_ = static_cast<int>(cap);
  period_ = static_cast<int>(period);
  link_rung_ = std::move(rung_by_link);
  held_one_size_ = std::move(held_by_link);
  rounds_since_step_back_ = since_step_back;
  calm_rounds_ = static_cast<int>(calm);
  proposed_ = false;
}

}  // namespace murmur::gossip::schedule
