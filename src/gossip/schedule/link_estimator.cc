#include "gossip/schedule/link_estimator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/check.h"

namespace murmur::gossip::schedule {

namespace {
// Weight of a sample one arrival older than another, in the fit. 0.9 gives
// the oldest of 16 samples a fifth of the newest one's say: a gradual drift
// is followed within a window, while noise is still averaged over most of it.
constexpr double kAgeDecay = 0.9;
// Sizes must span this factor for the line fit to separate latency from
// bandwidth; below it the fallback (probe latency, median bandwidth) is used.
// (Closer sizes, such as two neighbouring rungs of the ratio ladder, let
// queueing noise decide the fit; the policy explores far enough to span it.)
constexpr double kMinSizeSpan = 2.0;
// A sample of size within this factor of the suspects, agreeing with the fit,
// shows that the suspects were noise.
constexpr double kComparableSize = 4.0;
// The old fit and the suspects' line must predict a transfer this many times
// apart for its time to tell which one holds (closer in log-time).
constexpr double kDistinctLines = 2.0;

double median(std::vector<double> v) {
  MURMUR_CHECK(!v.empty());
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}
}  // namespace

LinkEstimator::LinkEstimator(LinkEstimatorOptions options) : options_(options) {
  MURMUR_CHECK_GE(options_.window, std::size_t{2});
  MURMUR_CHECK_GT(options_.probe_interval_s, 0.0);
  MURMUR_CHECK_GT(options_.change_factor, 1.0);
  MURMUR_CHECK_GE(options_.change_min_s, 0.0);
  MURMUR_CHECK_GE(options_.change_run, std::size_t{1});
  MURMUR_CHECK_LE(options_.change_run, options_.window);
  MURMUR_CHECK_GE(options_.suspect_run, std::size_t{1});
  MURMUR_CHECK_LE(options_.suspect_run, options_.change_run);
  MURMUR_CHECK_GE(options_.small_message_bytes, 0.0);
}

double LinkEstimator::predict(double bytes) const {
  if (!estimate_.known()) return 0;
  return estimate_.latency_s + (estimate_.bandwidth_known() ? bytes / estimate_.bandwidth_Bps : 0.0);
}

bool LinkEstimator::needs_probe(double now) const {
  return !last_sample_time_ || now - *last_sample_time_ > options_.probe_interval_s;
}

LinkEstimator::Verdict LinkEstimator::judge(const Sample& s) const {
  if (!estimate_.known()) return Verdict::kUnjudged;
  // A large message says nothing against a fit that has no bandwidth yet.
  if (s.bytes > options_.small_message_bytes && !estimate_.bandwidth_known()) return Verdict::kUnjudged;
  if (!estimate_.line_identified && s.bytes > options_.small_message_bytes) {
    // A fit from one message size cannot predict another (its bandwidth is
    // bytes over the whole time, a lower bound): a message of a size at
    // least kMinSizeSpan away from all of the window's is the second point
    // the line needs (the policy's exploration sends it), not a change.
    bool near = false;
    for (const Sample& w : window_)
      near |= w.bytes > options_.small_message_bytes && s.bytes < w.bytes * kMinSizeSpan &&
              w.bytes < s.bytes * kMinSizeSpan;
    if (!near) return Verdict::kUnjudged;
  }
  const double p = predict(s.bytes);
  if (!(p > 0)) return Verdict::kUnjudged;
  if (std::abs(s.seconds - p) <= options_.change_min_s) return Verdict::kAgrees;
  if (s.seconds > p * options_.change_factor) return Verdict::kSlower;
  if (s.seconds * options_.change_factor < p) return Verdict::kFaster;
  return Verdict::kAgrees;
}

void LinkEstimator::observe_with_receipt(double bytes, double send_seconds, double receive_seconds, double now) {
  // observe()'s checks, for every path (the set-aside one does not reach it).
  MURMUR_CHECK(std::isfinite(bytes) && std::isfinite(send_seconds) && std::isfinite(receive_seconds) &&
               std::isfinite(now));
  MURMUR_CHECK_GE(bytes, 0.0);
  MURMUR_CHECK_GE(send_seconds, 0.0);
  MURMUR_CHECK_GE(receive_seconds, 0.0);
  if (receive_seconds >= send_seconds || judge(Sample{bytes, send_seconds, next_seq_}) != Verdict::kSlower) {
    observe(bytes, send_seconds, now);
    return;
  }
  if (judge(Sample{bytes, receive_seconds, next_seq_}) == Verdict::kSlower) {
    observe(bytes, receive_seconds, now);  // slow even from the receiver's posting on: the link
    return;
  }
  // Not slow once the receiver was there: the rest of the send's time was
  // its lateness. (Also when the receive took far less than the fit: the
  // bytes had partly or wholly arrived before it was posted. Whether the
  // send waited for it meanwhile depends on the transport's flow control,
  // which one end cannot see; see the header.)
  last_sample_time_ = std::max(last_sample_time_.value_or(now), now);
  ++estimate_.observed;
  ++estimate_.late_receiver;
}

void LinkEstimator::observe(double bytes, double seconds, double now) {
  MURMUR_CHECK(std::isfinite(bytes) && std::isfinite(seconds) && std::isfinite(now));
  MURMUR_CHECK_GE(bytes, 0.0);
  MURMUR_CHECK_GE(seconds, 0.0);
  // Samples may arrive slightly out of `now` order (a send's sample waits
  // for its receipt).
  last_sample_time_ = std::max(last_sample_time_.value_or(now), now);
  ++estimate_.observed;
  const Sample s{bytes, seconds, next_seq_++};
  // A run that has not completed within a window of transfers is scattered
  // stalls, not a change.
  if (!run_.empty() && s.seq - run_.front().seq >= options_.window) end_run();
  Verdict v = judge(s);
  if (!run_.empty() && v != Verdict::kSlower && v != Verdict::kFaster) {
    // The old fit has no objection (or cannot judge this size): weigh the
    // sample against the suspects' own line too.
    const double a = std::max(s.bytes, run_.back().bytes);
    const double b = std::min(s.bytes, run_.back().bytes);
    const bool comparable = a <= options_.small_message_bytes || a <= b * kComparableSize;
    const RunFit fit = fits_run(s);
    if ((v == Verdict::kAgrees && comparable) || fit == RunFit::kOldFit) {
      end_run();  // the suspects were noise
    } else if (v == Verdict::kUnjudged && fit == RunFit::kRunLine) {
      v = run_direction_;  // e.g. a compressed message on a link that just slowed: one more suspect
    }
  }
  if (v == Verdict::kSlower || v == Verdict::kFaster) {
    if (!run_.empty() && run_direction_ != v) run_.clear();
    run_.push_back(s);
    run_direction_ = v;
    if (run_.size() >= options_.change_run) {
      restart_from_run(now);
    } else {
      update_suspect();
    }
    return;
  }
  admit(s);
  refit();
  update_suspect();
}

void LinkEstimator::end_run() {
  run_.clear();
  run_direction_ = Verdict::kUnjudged;
  estimate_.suspect_bandwidth_Bps = 0;
}

const LinkEstimator::Sample* LinkEstimator::largest_suspect() const {
  const Sample* largest = nullptr;
  for (const Sample& r : run_)
    if (r.bytes > options_.small_message_bytes && (largest == nullptr || r.bytes > largest->bytes)) largest = &r;
  return largest;
}

LinkEstimator::RunFit LinkEstimator::fits_run(const Sample& s) const {
  // Two explanations of this transfer: the old fit, and the suspects' line
  // (the latency plus the largest suspect's time per byte; a smaller
  // message takes proportionally less beyond the latency). The one closer
  // in log-time wins, when they differ by more than kDistinctLines at this
  // size and the sample is not within change_min_s of both (tiny messages:
  // jitter decides).
  const Sample* ref = largest_suspect();
  const double old_line = predict(s.bytes);
  if (ref == nullptr || s.bytes <= options_.small_message_bytes || !(old_line > 0)) return RunFit::kUnknown;
  const double latency = estimate_.latency_s;
  const double run_line = latency + s.bytes * std::max(ref->seconds - latency, 0.0) / ref->bytes;
  if (!(run_line > 0)) return RunFit::kUnknown;
  if (std::max(run_line, old_line) < kDistinctLines * std::min(run_line, old_line)) return RunFit::kUnknown;
  if (std::abs(s.seconds - run_line) <= options_.change_min_s &&
      std::abs(s.seconds - old_line) <= options_.change_min_s)
    return RunFit::kUnknown;
  const double t = std::max(s.seconds, 1e-9);
  return std::abs(std::log(t / run_line)) < std::abs(std::log(t / old_line)) ? RunFit::kRunLine : RunFit::kOldFit;
}

void LinkEstimator::update_suspect() {
  estimate_.suspect_bandwidth_Bps = 0;
  if (run_direction_ != Verdict::kSlower || run_.size() < options_.suspect_run) return;
  if (const Sample* ref = largest_suspect())
    estimate_.suspect_bandwidth_Bps = ref->bytes / std::max(ref->seconds - estimate_.latency_s, 1e-12);
}

void LinkEstimator::admit(const Sample& s) {
  window_.push_back(s);
  while (window_.size() > options_.window) window_.pop_front();
  if (s.bytes <= options_.small_message_bytes) {
    small_.push_back(s);
    while (small_.size() > options_.window) small_.pop_front();
  }
}

void LinkEstimator::restart_from_run(double now) {
  // Keep what arrived since the run began (it agreed with the old fit but was
  // measured under the new conditions), drop everything before.
  const std::uint64_t first = run_.front().seq;
  std::vector<Sample> merged;
  for (const Sample& s : window_)
    if (s.seq >= first) merged.push_back(s);
  merged.insert(merged.end(), run_.begin(), run_.end());
  std::sort(merged.begin(), merged.end(), [](const Sample& a, const Sample& b) { return a.seq < b.seq; });
  const bool latency_moved =
      std::any_of(run_.begin(), run_.end(), [&](const Sample& s) { return s.bytes <= options_.small_message_bytes; });
  window_.assign(merged.begin(), merged.end());
  while (window_.size() > options_.window) window_.pop_front();
  if (latency_moved) {
    // Old probes, and the old line, measured the old latency.
    line_latency_.reset();
    small_.clear();
    for (const Sample& s : merged)
      if (s.bytes <= options_.small_message_bytes) small_.push_back(s);
  }
  end_run();  // the fit now has it
  ++estimate_.changes;
  estimate_.last_change_time = now;
  refit();
}

void LinkEstimator::refit() {
  estimate_.samples = window_.size();
  if (window_.empty()) return;
  const double small = options_.small_message_bytes;
  // The fit set: the window, and the probes that fell out of it.
  std::vector<Sample> fit;
  for (const Sample& s : small_)
    if (s.seq < window_.front().seq) fit.push_back(s);
  fit.insert(fit.end(), window_.begin(), window_.end());

  double min_x = std::numeric_limits<double>::infinity(), max_x = 0, min_y = min_x;
  for (const Sample& s : fit) {
    min_x = std::min(min_x, s.bytes);
    max_x = std::max(max_x, s.bytes);
    min_y = std::min(min_y, s.seconds);
  }
  std::optional<double> probe_latency;
  for (const Sample& s : small_) probe_latency = std::min(probe_latency.value_or(s.seconds), s.seconds);
  if (max_x <= small) {
    // Only latency is visible; the bandwidth stays what it was (an idle link
    // probed for a while keeps its last known bandwidth).
    estimate_.latency_s = probe_latency.value_or(min_y);
    return;
  }
  if (max_x >= kMinSizeSpan * std::max(min_x, 1.0)) {
    // Weighted least squares of seconds on bytes, bytes scaled to [0, 1] for
    // conditioning. Probes older than the window count as its oldest sample.
    const std::uint64_t newest = window_.back().seq;
    const double max_age = static_cast<double>(options_.window - 1);
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const Sample& s : fit) {
      const double y_floor = std::max(s.seconds, 1e-9);
      const double age = std::min(static_cast<double>(newest - s.seq), max_age);
      const double w = std::pow(kAgeDecay, age) / (y_floor * y_floor);
      const double x = s.bytes / max_x;
      sw += w;
      sx += w * x;
      sy += w * s.seconds;
      sxx += w * x * x;
      sxy += w * x * s.seconds;
    }
    const double det = sw * sxx - sx * sx;
    if (det > 1e-12 * sw * sxx) {
      double slope = (sw * sxy - sx * sy) / det;
      double intercept = (sy - slope * sx) / sw;
      if (intercept < probe_latency.value_or(0.0)) {
        // No link is faster than its probes: take theirs (or none) and fit
        // the slope alone, so small messages are not predicted free.
        intercept = std::min(probe_latency.value_or(0.0), min_y);
        slope = (sxy - intercept * sx) / sxx;
      }
      if (slope > 0) {
        estimate_.latency_s = std::min(intercept, min_y);
        estimate_.bandwidth_Bps = max_x / slope;
        estimate_.line_identified = true;
        line_latency_ = estimate_.latency_s;
        return;
      }
    }
  }
  // Sizes too alike (or a fit without a positive slope): latency from the
  // probes, else from the last line that was identified, and the bandwidth
  // from the large messages alone. A busy link is never probed, and its
  // window holds one size whenever its ratio has held for `window`
  // transfers: without the line's latency, the whole per-message cost (on a
  // loaded host, milliseconds of thread wake-ups on every send) would be
  // read as bytes, the smaller messages of a lower ratio would look slower
  // still, and the ratio would slide to the floor (docs/scheduler.md,
  // "Per-message cost").
  double latency = probe_latency.value_or(0.0);
  std::vector<double> large_seconds;
  for (const Sample& s : window_)
    if (s.bytes > small) large_seconds.push_back(s.seconds);
  if (probe_latency) {
    // A stale probe latency must not make a large message look infinitely fast.
    for (const double t : large_seconds) latency = std::min(latency, t / 2);
  } else if (line_latency_) {
    // Nor may the line's: the typical message keeps a tenth of its time for
    // its bytes (a faster one is a message the line's latency overstates).
    latency = std::min(*line_latency_, 0.9 * median(large_seconds));
  }
  std::vector<double> rates;
  for (const Sample& s : window_)
    if (s.bytes > small) rates.push_back(s.bytes / std::max(s.seconds - latency, 1e-12));
  estimate_.latency_s = latency;
  estimate_.bandwidth_Bps = median(std::move(rates));
  estimate_.line_identified = probe_latency.has_value();
}

namespace {

template <typename Samples>
void save_samples(StateWriter& w, const Samples& samples) {
  std::vector<double> v;
  for (const auto& s : samples) {
    v.push_back(s.bytes);
    v.push_back(s.seconds);
    v.push_back(static_cast<double>(s.seq));
  }
  w.doubles(v);
}

template <typename Sample>
std::vector<Sample> load_samples(StateReader& r, const char* field, std::size_t most) {
  const auto v = r.doubles(field);
  if (v.size() % 3 != 0 || v.size() / 3 > most)
    throw std::invalid_argument(std::string("saved state of schedule: ") + field + " holds " +
                                std::to_string(v.size()) + " numbers, not up to " + std::to_string(most) +
                                " samples of 3");
  std::vector<Sample> out;
  for (std::size_t i = 0; i < v.size(); i += 3) {
    if (!(v[i] >= 0) || !(v[i + 1] >= 0) || !std::isfinite(v[i]) || !std::isfinite(v[i + 1]) || !(v[i + 2] >= 0))
      throw std::invalid_argument(std::string("saved state of schedule: ") + field + " has a bad sample");
    out.push_back({v[i], v[i + 1], static_cast<std::uint64_t>(v[i + 2])});
  }
  return out;
}

}  // namespace

void LinkEstimator::save(StateWriter& w) const {
  save_samples(w, window_);
  save_samples(w, small_);
  save_samples(w, run_);
  w.u64(static_cast<std::uint64_t>(run_direction_));
  w.u64(next_seq_);
  w.f64(estimate_.latency_s);
  w.f64(estimate_.bandwidth_Bps);
  w.u64(estimate_.samples);
  w.u64(estimate_.line_identified ? 1 : 0);
  w.u64(estimate_.observed);
  w.u64(estimate_.changes);
  w.u64(estimate_.late_receiver);
  w.f64(estimate_.suspect_bandwidth_Bps);
}

void LinkEstimator::load(StateReader& r) {
  auto window = load_samples<Sample>(r, "link window", options_.window);
  auto small = load_samples<Sample>(r, "link probes", options_.window);
  auto run = load_samples<Sample>(r, "link suspects", options_.window);
  const std::uint64_t direction = r.u64("link suspect direction");
  if (direction > static_cast<std::uint64_t>(Verdict::kFaster))
    throw std::invalid_argument("saved state of schedule: link suspect direction " + std::to_string(direction));
  LinkEstimate e;
  const std::uint64_t next_seq = r.u64("link sequence");
  e.latency_s = r.f64("link latency");
  e.bandwidth_Bps = r.f64("link bandwidth");
  e.samples = r.u64("link samples");
  e.line_identified = r.u64("link line identified") != 0;
  e.observed = r.u64("link observed");
  e.changes = r.u64("link changes");
  e.late_receiver = r.u64("link late receiver");
  e.suspect_bandwidth_Bps = r.f64("link suspect bandwidth");
  window_.assign(window.begin(), window.end());
  small_.assign(small.begin(), small.end());
  run_ = std::move(run);
  run_direction_ = static_cast<Verdict>(direction);
  next_seq_ = next_seq;
  last_sample_time_.reset();
  line_latency_.reset();
  estimate_ = e;
}

}  // namespace murmur::gossip::schedule
