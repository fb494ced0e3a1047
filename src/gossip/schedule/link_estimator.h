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
// Model: seconds = latency + bytes / bandwidth. The fit is a weighted least
// squares over the last `window` samples plus the last `window` small
// messages (probes), weighted by 1/t^2 (relative errors: small messages pin
// the latency, large ones the bandwidth) and by age (recent samples count
// more, so a slow drift is followed). The latency is never put below the
// fastest recent probe (large messages alone pin it poorly). When the sizes
// span less than 2x and no probe was seen (a gossip link carries one message
// size per round) the line is not identifiable; then the latency is the
// fastest probe (0 without one) and the bandwidth the median of
// bytes / (seconds - latency) over the large messages.
//
// Change detection: a sample whose time is off the prediction by more than
// `change_factor` (either way) is held back as a suspect instead of entering
// the window. `change_run` suspects in a row, all off in the same direction,
// mean the link changed: the window restarts from them (plus the samples of
// very different size that agreed with the old fit meanwhile, e.g. probes,
// which a bandwidth change hardly affects). A sample of comparable size that
// agrees with the fit ends the run, and the suspects are dropped as noise.
// A sample of another size is also weighed against the suspects' own line
// (the latency plus the largest suspect's time per byte): when the two
// lines differ by more than 2x at its size, the one closer in
// log-time explains it. The suspects' line explaining a sample the old fit
// cannot judge (another size on a one-size fit) makes it one more suspect,
// as a compressed message on a link that has just slowed down is; the old
// fit explaining it ends the run as noise. A run not completed within
// `window` transfers ends too (scattered stalls are not a change).
// So a 100x bandwidth drop or recovery shows in the estimate after
// `change_run` (default 3) transfers, while a single jittered transfer does
// not move it at all. While a slower run is pending, the estimate reports
// the bandwidth its largest suspect implies (suspect_bandwidth_Bps),
// so that an integrator can act on a slowdown at once ("fast attack, slow
// release", as TCP halves its window at the first loss): acting on a
// suspect that proves to be noise costs compressed rounds until the
// integrator's next decision, waiting for the confirmation costs every
// round until then at the old rate.
//
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

namespace murmur::gossip::schedule {

struct LinkEstimatorOptions {
  std::size_t window = 16;            // samples in the fit, >= 2
  double probe_interval_s = 1.0;      // needs_probe() after this long without a sample
  double change_factor = 3.0;         // a sample off the prediction by more than this is a suspect...
  double change_min_s = 50e-6;        // ...and by more than this many seconds (OS jitter on tiny messages)
  std::size_t change_run = 3;         // suspects in a row that make a change, 1..window
  std::size_t suspect_run = 1;        // slower suspects in a row before suspect_bandwidth_Bps shows, 1..change_run
  double small_message_bytes = 256;   // at most this size a message measures latency (a probe)
};

struct LinkEstimate {
  double latency_s = 0;      // one transfer's fixed cost
  double bandwidth_Bps = 0;  // bytes per second; 0 while unknown (only small messages seen)
  std::size_t samples = 0;   // samples in the current window
  // False while every message in the window has about one size and no
  // probe pinned the latency: latency and bandwidth are then not separable
  // and the bandwidth is a lower bound (bytes / whole time).
  bool line_identified = false;
  std::uint64_t observed = 0;                // samples ever observed (suspects included)
  std::uint64_t changes = 0;                 // changes detected so far
  // Samples set aside by observe_with_receipt: slow only by the receiver's
  // lateness. Counted in `observed` too.
  std::uint64_t late_receiver = 0;
  std::optional<double> last_change_time;    // `now` of the sample that completed the last change
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
  // receive to its completion; AlgorithmOptions::receipts). A message that
  // cannot all sit in the receiver's buffers (rendezvous, or flow control:
  // model-sized messages over the fabric) leaves only as fast as its
  // receiver takes it, so a late receiver makes the send slow while its
  // receive takes the link's time or less. Hence, for a send that the fit
  // calls slower (any other is observed as it is, as is every one before
  // there is a fit): a receive slower too is observed at the receive time
  // (the link slowed, lateness or not); otherwise the send is set aside as
  // the receiver's lateness (LinkEstimate::late_receiver) and changes
  // nothing. The blind spot: a message small enough to wait whole in a
  // late receiver's buffers (eager) left at the link's speed, so a
  // slowdown that only such messages carry, towards a receiver that is
  // always late, is not seen from this end; the other end, whose receiver
  // is early, sees it. murmur-sim's messages are all eager (its sends
  // complete on delivery), so there a late receiver never slows a send and
  // receipts only delay the samples. MURMUR_CHECKs as observe(), and
  // receive_seconds >= 0, finite.
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
  std::vector<Sample> run_;           // suspects in a row
  Verdict run_direction_ = Verdict::kUnjudged;
  std::uint64_t next_seq_ = 0;
  std::optional<double> last_sample_time_;
  LinkEstimate estimate_;
};

}  // namespace murmur::gossip::schedule
