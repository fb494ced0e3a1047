#include "gossip/schedule/compute_estimator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"

namespace murmur::gossip::schedule {

ComputeEstimator::ComputeEstimator(std::size_t window) : window_(window) { MURMUR_CHECK_GE(window_, std::size_t{1}); }

void ComputeEstimator::observe(double seconds) {
  MURMUR_CHECK(std::isfinite(seconds));
  MURMUR_CHECK_GE(seconds, 0.0);
  recent_.push_back(seconds);
  while (recent_.size() > window_) recent_.pop_front();
  std::vector<double> v(recent_.begin(), recent_.end());
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  median_ = v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

void ComputeEstimator::save(StateWriter& w) const { w.doubles(std::vector<double>(recent_.begin(), recent_.end())); }

void ComputeEstimator::load(StateReader& r) {
  const auto recent = r.doubles("compute seconds");
  for (double s : recent)
    if (!(s >= 0) || !std::isfinite(s))
      throw std::invalid_argument("saved state of schedule: a step of " + std::to_string(s) + " seconds");
  recent_.clear();
  median_ = 0;
  for (double s : recent) observe(s);
}

}  // namespace murmur::gossip::schedule
