// LinkEstimator: latency and bandwidth of one directed link, estimated only
// from the transfers that crossed it (and small probes while it is idle).
//
//   LinkEstimator est({.window = 16});
//   est.observe(bytes, seconds, now);   // after each completed send on the link
//   est.observe_with_receipt(bytes, seconds, receive_seconds, now);  // ... with the receiver's time
//   if (est.needs_probe(now)) ...       // link idle: send a small probe, observe it
//   LinkEstimate e = est.estimate();    // e.latency_s, e.bandwidth_Bps
//   double t = est.predict(bytes);      // latency_s + bytes / bandwidth_Bps
//
// The model, in one paragraph: seconds = latency + bytes / bandwidth, fitted
// by weighted least squares over the last `window` transfers plus the last
// `window` probes (at most small_message_bytes), the latency never below the
// fastest recent probe; with one message size and no probe the line is not
// identifiable (LinkEstimate::line_identified): the latency is then the last
// identified line's, and without one the bandwidth is a lower bound. A
// transfer off its prediction by more than change_factor is held
// back as a suspect; change_run suspects in a row in one direction restart
// the fit from them (a 100x drop or recovery shows after change_run
// transfers, a single jittered one never moves the estimate); a transfer
// that shows the suspects were noise ends the run, and so does a run not
// completed within `window` transfers. The fit, the
// change detection with its rule for transfers of another size, and the
// reasons are docs/scheduler.md, "The model"; this header states only what
// a caller relies on.
//
// Suspects: while at least suspect_run slower suspects are pending, the
// estimate reports the bandwidth they imply (suspect_bandwidth_Bps), so the
// integrator can act on a slowdown at once; a faster run shows only once
// confirmed.
// Times: `now` is any monotonic clock in seconds (the integrator's); the
// estimator only compares values of it. Deterministic: the same samples give
// the same estimate.
// Threads: not thread-safe; one owner (per link) calls everything. No call
// blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "gossip/algorithm/state_blob.h"

namespace murmur::gossip::schedule {

struct LinkEstimatorOptions {
  std::size_t window = 16;           // samples in the fit, >= 2
  double probe_interval_s = 1.0;     // needs_probe() after this long without a sample
  double change_factor = 3.0;        // a sample off the prediction by more than this is a suspect...
  double change_min_s = 50e-6;       // ...and by more than this many seconds (OS jitter on tiny messages)
  std::size_t change_run = 3;        // suspects in a row that make a change, 1..window
  std::size_t suspect_run = 1;       // slower suspects in a row before suspect_bandwidth_Bps shows, 1..change_run
  double small_message_bytes = 256;  // at most this size a message measures latency (a probe)
};

struct LinkEstimate {
  double latency_s = 0;      // one transfer's fixed cost
  double bandwidth_Bps = 0;  // bytes per second; 0 while unknown (only small messages seen)
  std::size_t samples = 0;   // samples in the current window
  // False while every message in the window has about one size and no
  // probe pinned the latency: latency and bandwidth are then not separable.
  // The latency is then the last identified line's (0 before there was one,
  // which makes the bandwidth a lower bound: bytes / whole time).
  bool line_identified = false;
  std::uint64_t observed = 0;  // samples ever observed (suspects included)
  std::uint64_t changes = 0;   // changes detected so far
  // Samples set aside by observe_with_receipt: slow only by the receiver's
  // lateness. Counted in `observed` too.
  std::uint64_t late_receiver = 0;
  std::optional<double> last_change_time;  // `now` of the sample that completed the last change
  // While a run of at least suspect_run slower suspects is pending (a
  // change not yet confirmed): the bandwidth its largest message implies,
  // bytes / (seconds - latency_s). 0 otherwise: no such run (or a shorter
  // one), the run ended as noise, or the change was confirmed (the fit has
  // it).
  double suspect_bandwidth_Bps = 0;
  bool known() const { return samples > 0; }
  bool bandwidth_known() const { return bandwidth_Bps > 0; }
};

class LinkEstimator {
 public:
  // MURMUR_CHECKs the options (see LinkEstimatorOptions' comments).
  explicit LinkEstimator(LinkEstimatorOptions options = {});

  // One completed transfer of `bytes` that took `seconds` (from handing it to
  // the transport to its completion), completed at `now`. MURMUR_CHECKs
  // bytes >= 0 and seconds >= 0, both finite.
  void observe(double bytes, double seconds, double now);
  // The same transfer with its receiver's own time (the receipt: posting the
  // receive to its completion; AlgorithmOptions::receipts). Only a send that
  // the fit calls slower is treated apart (any other is observed as it is,
  // as is every one before there is a fit): a receive slower too is
  // observed at the receive time (the link slowed, lateness or not);
  // otherwise the send is set aside as the receiver's lateness
  // (LinkEstimate::late_receiver) and changes nothing. Why, and the blind
  // spot (a slowdown carried only by eager messages towards a receiver that
  // is always late is not seen from this end): docs/scheduler.md, "Late
  // receivers". MURMUR_CHECKs as observe(), and receive_seconds >= 0, finite.
  void observe_with_receipt(double bytes, double send_seconds, double receive_seconds, double now);

  LinkEstimate estimate() const { return estimate_; }
  // latency_s + bytes / bandwidth_Bps; latency_s alone while the bandwidth
  // is unknown; 0 before any sample.
  double predict(double bytes) const;
  // True before the first sample and when the last one is older than
  // probe_interval_s: the integrator may then send a small probe (at most
  // small_message_bytes) and observe() it.
  bool needs_probe(double now) const;

  const LinkEstimatorOptions& options() const { return options_; }

  // A checkpoint's copy (ScheduleController::save_state): the samples, the
  // pending suspects and the estimate. Times of another process's clock
  // (the last sample's, the last change's) are not kept: a loaded estimator
  // needs_probe() at once and has no last_change_time. load() throws
  // std::invalid_argument for counts that do not fit these options.
  void save(StateWriter& w) const;
  void load(StateReader& r);

 private:
  struct Sample {
    double bytes;
    double seconds;
    std::uint64_t seq;  // order of arrival
  };
  // Where a sample lies against the current estimate.
  enum class Verdict { kUnjudged, kAgrees, kSlower, kFaster };
  Verdict judge(const Sample& s) const;
  // Which line explains a sample while suspects are pending: theirs, the
  // old fit's, or neither clearly (see observe()).
  enum class RunFit { kUnknown, kRunLine, kOldFit };
  RunFit fits_run(const Sample& s) const;
  const Sample* largest_suspect() const;  // nullptr: only small suspects
  // suspect_bandwidth_Bps from a pending slower run (0 without one).
  void update_suspect();
  void end_run();
  void admit(const Sample& s);
  void restart_from_run(double now);
  void refit();

  LinkEstimatorOptions options_;
  std::deque<Sample> window_;
  // The last `window` small messages (probes), kept apart from the window:
  // a busy link's window fills with model messages, and the fit still needs
  // them to pin the latency.
  std::deque<Sample> small_;
  std::vector<Sample> run_;  // suspects in a row
  Verdict run_direction_ = Verdict::kUnjudged;
  std::uint64_t next_seq_ = 0;
  std::optional<double> last_sample_time_;
  // The latency of the last line the fit identified: the one-size fallback's
  // latency when no probe has one (refit()). Dropped when a change moves the
  // latency, and not saved (a loaded estimator learns it again).
  std::optional<double> line_latency_;
  LinkEstimate estimate_;
};

}  // namespace murmur::gossip::schedule
