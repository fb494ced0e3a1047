// AdaptivePolicy: each round, the gossip period H and the compression ratio
// per link, from the scheduler's own measurements (never from an emulated
// link profile). docs/scheduler.md explains the model and the knobs.
//
// The rule, in one line: each round, the smallest period H at which every
// link fits its budget (budget_fraction * H * compute time per step) at the
// floor ratio, then per link the largest ratio on the ladder that fits;
// a consensus guard steps back, hysteresis keeps noise from flapping a
// choice, one-size links explore one round at twice the bytes, and react()
// re-decides ratios between agreements. The rule with its reasons and
// numbers is docs/scheduler.md, "The rule"; this header states only what a
// caller must respect.
// Links whose bandwidth is unknown (no transfer measured yet), and all links
// while compute_s_per_step is unknown (0), keep their ratio (max_ratio at
// first) and say so.
//
// AGREEMENT (required by the algorithms): rounds pair up across ranks, so all
// ranks must use the same period in the same round. Each rank measures its
// own links, so proposals differ; the integrator must combine them into one
// agreed period, the maximum of all proposals (a larger period only adds
// budget, so every rank still fits), and pass it to decide(). Given the same
// bounds, the same sequence of inputs and agreed periods, decide() returns
// the same decision on every rank and every run (no clocks, no randomness,
// ordered containers). The one-argument decide() uses the rank's own
// proposal as the agreed period: correct only on one rank or when all ranks
// pass identical inputs (e.g. built from an allgather of every link view).
// The guard acts identically on all ranks only when consensus_distance and
// consensus_reference are the same on every rank; murmur's controller passes
// each rank's own signal against a shared reference, so ranks may guard
// differently and the max-period agreement absorbs it.
// Ratios need no agreement: a link's ratio is chosen by its sender, and the
// receiver decodes whatever ratio a message carries.
//
// Errors: inputs that break an invariant (negative times, an agreed period
// outside the bounds, decide without propose_period) are bugs: MURMUR_CHECK.
// Threads: not thread-safe; one owner calls it once per round. No call blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gossip/algorithm/state_blob.h"

namespace murmur::gossip::schedule {

struct ScheduleBounds {
  double min_ratio = 0.001;  // most aggressive compression, in (0, 1]
  double max_ratio = 1.0;    // least aggressive (1 = uncompressed)
  int min_period = 1;        // H bounds, >= 1
  int max_period = 16;
  double consensus_guard = 2.0;   // step back when distance > guard * reference; 0: guard off
  double budget_fraction = 0.8;   // share of the overlapped compute that comm may take, (0, 1]
  double hysteresis = 0.25;       // relative band around the budget, [0, 1)
  int guard_cooldown_rounds = 5;  // rounds between two step backs (the distance lags)
  int guard_release_rounds = 20;  // calm rounds in a row before one step back is undone
  int explore_rounds = 20;  // rounds a ratio is held on a one-size link before one round at 2x the bytes; 0: never
};

// MURMUR_CHECKs the ranges in ScheduleBounds' comments (a file or flag is
// checked by schedule_file.h first, with file:line).
void check_bounds(const ScheduleBounds& b);

struct LinkView {
  int peer = -1;
  double latency_s = 0;
  double bandwidth_Bps = 0;  // <= 0: unknown
  std::size_t samples = 0;   // behind the estimate (recorded, not used)
  // The estimate separates latency from bandwidth (LinkEstimate::
  // line_identified); false: measured at one message size only.
  bool identified = true;
  // bandwidth_Bps is a pending slowdown's: transfers slower than the
  // estimate by the estimator's change factor, not yet confirmed as a
  // change (LinkEstimate::suspect_bandwidth_Bps). The integrator plans for
  // the slowdown at once and lets the estimator confirm or drop it; the
  // agreed decisions see it too, so a rank whose slowdown is pending at
  // an interval may propose a longer period for that decision.
  bool suspect = false;
  // Transfers set aside so far as slow only by the receiver's lateness
  // (LinkEstimate::late_receiver; recorded, not used).
  std::uint64_t late_receiver = 0;
};

struct ScheduleInputs {
  std::uint64_t round = 0;           // recorded, not used
  std::vector<LinkView> links;       // this rank's outgoing links, one per peer
  double compute_s_per_step = 0;     // <= 0: unknown
  std::size_t parameters = 0;        // values per message before compression
  double bytes_per_kept_value = 6;   // wire cost of one kept value (4 B value + index)
  double bytes_per_dense_value = 4;  // wire cost of one value uncompressed
  double header_bytes = 16;          // per message
  bool per_link = true;              // false: the algorithm sends one message to all (choco)
  double consensus_distance = -1;    // < 0: not measured this round
  double consensus_reference = -1;   // the integrator's baseline for the distance; <= 0: none (no guard)
};

// Bytes of one message at `ratio`: header + min(ceil(ratio * n) * kept, n * dense).
double message_bytes(const ScheduleInputs& in, double ratio);
// latency_s + message_bytes / bandwidth_Bps (latency alone when the bandwidth is unknown).
double link_seconds(const ScheduleInputs& in, const LinkView& link, double ratio);

struct ScheduleDecision {
  std::uint64_t round = 0;
  int period = 1;                          // the agreed H
  int proposed_period = 1;                 // this rank's wish before agreement
  double ratio = 1.0;                      // one ratio for all links: the smallest link ratio
  std::map<int, double> link_ratio;        // by peer (all == ratio when !per_link)
  std::map<int, double> link_predicted_s;  // t(ratio) per peer
  // Step 6: ratios to use for the next round only, then the ones above
  // again (a measurement at a second size, not a choice). 0 / absent: none.
  double explore_ratio = 0;                  // the shared ratio's (per_link false)
  std::map<int, double> explore_link_ratio;  // by peer (per_link true)
  double predicted_comm_s = 0;               // the slowest link's t
  double compute_budget_s = 0;               // period * compute_s_per_step (before budget_fraction)
  double floor_ratio = 0;                    // the most aggressive ratio the guard allows now
  int period_cap = 1;                        // the largest H the guard allows now
  bool guard_stepped_back = false;           // this round
  bool changed = false;                      // period or some link ratio differs from the last decision
  std::string reason;                        // why, in words, with the numbers
};

class AdaptivePolicy {
 public:
  // MURMUR_CHECKs the bounds (check_bounds).
  explicit AdaptivePolicy(const ScheduleBounds& bounds);

  // Step 1 of a round: updates the guard from the consensus numbers and
  // returns the period this rank needs.
  int propose_period(const ScheduleInputs& in);
  // Step 2: the ratios for the period all ranks agreed on (the max of their
  // proposals, within [min_period, max_period]); remembers the choice for
  // hysteresis. `in` must be the inputs given to propose_period.
  ScheduleDecision decide(const ScheduleInputs& in, int agreed_period);
  // Both steps, agreeing with itself (see AGREEMENT above).
  ScheduleDecision decide(const ScheduleInputs& in);
  // Step 7, between agreements (not between propose_period and decide):
  // a decision at the last agreed period when the ratio in use no longer
  // fits and some ratio can move; nullopt otherwise (or before the first
  // decision).
  std::optional<ScheduleDecision> react(const ScheduleInputs& in);

  const ScheduleBounds& bounds() const { return bounds_; }
  const std::vector<double>& ladder() const { return ladder_; }

  // A checkpoint's copy of what carries from one decision to the next (the
  // guard's floor and cap, the last period, each link's rung, the
  // hysteresis counters). load() throws std::invalid_argument when it does
  // not fit these bounds (another ladder, a period outside them).
  void save(StateWriter& w) const;
  void load(StateReader& r);

 private:
  ScheduleDecision decide(const ScheduleInputs& in, int agreed_period, bool explore);
  void update_guard(const ScheduleInputs& in);
  std::size_t most_aggressive_rung_in_use() const;
  double slowest_at_floor(const ScheduleInputs& in) const;
  std::size_t choose_rung(const ScheduleInputs& in, const LinkView& link, double budget) const;
  // Step 6: the rung to try for one round for `key`, or `rung` (no try).
  std::size_t maybe_explore(const ScheduleInputs& in, int key, std::size_t rung, bool one_size, std::string& note);

  const ScheduleBounds bounds_;
  const std::vector<double> ladder_;      // descending, ladder_[0] = max_ratio
  std::size_t floor_rung_;                // most aggressive rung allowed (guard)
  int period_cap_;                        // largest period allowed (guard)
  int period_;                            // last agreed period
  std::map<int, std::size_t> link_rung_;  // last choice per peer
  // Decisions in a row each link (peer; -1: the shared ratio) has been
  // below max_ratio while measured at one size: docs/scheduler.md, rule 5.
  std::map<int, int> held_one_size_;
  std::uint64_t rounds_since_step_back_;
  int calm_rounds_ = 0;
  // Set by propose_period for decide.
  bool proposed_ = false;
  int proposal_ = 1;
  bool stepped_back_ = false;
  std::string guard_note_;
  std::string period_note_;
};

}  // namespace murmur::gossip::schedule
