#include "gossip/algorithm/deadline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/check.h"

namespace murmur::gossip {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("DeadlineOptions: " + what);
}

}  // namespace

FailureDeadline::FailureDeadline(DeadlineOptions options) : options_(options) {
  require(options_.multiplier > 0, "multiplier " + std::to_string(options_.multiplier) + " must be > 0");
  require(options_.percentile > 0 && options_.percentile <= 1,
          "percentile " + std::to_string(options_.percentile) + " must be in (0, 1]");
  require(options_.floor_s > 0, "floor_s " + std::to_string(options_.floor_s) + " must be > 0");
  require(options_.ceiling_s >= options_.floor_s, "ceiling_s " + std::to_string(options_.ceiling_s) +
                                                      " must be >= floor_s " + std::to_string(options_.floor_s));
  require(options_.window >= 1, "window must be >= 1");
  require(options_.min_samples >= 1 && options_.min_samples <= options_.window,
          "min_samples " + std::to_string(options_.min_samples) + " must be in [1, window " +
              std::to_string(options_.window) + "]");
  waits_.reserve(options_.window);
}

void FailureDeadline::observe(double wait_seconds) {
  MURMUR_CHECK(std::isfinite(wait_seconds));
  MURMUR_CHECK_GE(wait_seconds, 0.0);
  std::lock_guard lock(mutex_);
  if (waits_.size() < options_.window) {
    waits_.push_back(wait_seconds);
  } else {
    waits_[next_] = wait_seconds;
    next_ = (next_ + 1) % options_.window;
  }
  ++observed_;
  stale_ = true;
}

double FailureDeadline::deadline_s() const {
  std::lock_guard lock(mutex_);
  if (!stale_) return cached_s_;
  if (waits_.size() < options_.min_samples) {
    cached_s_ = options_.floor_s;
  } else {
    // Nearest rank: the ceil(p * n)-th smallest wait.
    std::vector<double> sorted = waits_;
    const auto rank = static_cast<std::size_t>(std::ceil(options_.percentile * static_cast<double>(sorted.size())));
    const auto at = sorted.begin() + static_cast<std::ptrdiff_t>(std::clamp<std::size_t>(rank, 1, sorted.size()) - 1);
    std::nth_element(sorted.begin(), at, sorted.end());
    cached_s_ = std::clamp(options_.multiplier * *at, options_.floor_s, options_.ceiling_s);
  }
  stale_ = false;
  return cached_s_;
}

std::size_t FailureDeadline::samples() const {
  std::lock_guard lock(mutex_);
  return observed_;
}

}  // namespace murmur::gossip
