#include "fabric/libfabric/spin_policy.h"

#include <algorithm>

namespace murmur::fabric::libfabric {

bool SpinPolicy::keep_polling(Clock::time_point now, bool outstanding) {
  if (!in_stretch_) {
    in_stretch_ = true;
    blocked_ = false;
    learning_ = outstanding;  // a stretch that ends in a new post says nothing about completions
    stretch_start_ = now;
  }
  if (blocked_) return false;
  if (outstanding && now - stretch_start_ < budget_) return true;
  // A miss only when polling was tried for something outstanding.
  if (outstanding && budget_ > Clock::duration::zero()) {
    budget_ /= 2;
    if (budget_ < std::chrono::microseconds(1)) budget_ = Clock::duration::zero();
  }
  blocked_ = true;
  return false;
}

void SpinPolicy::note_work(Clock::time_point now) {
  if (!in_stretch_) return;
  in_stretch_ = false;
  if (!learning_) return;
  const auto gap = now - stretch_start_;
  if (!blocked_) {
    budget_ = std::min<Clock::duration>(max_, std::max<Clock::duration>(budget_ * 2, gap * 2));
  } else if (gap <= max_) {
    budget_ = std::min<Clock::duration>(max_, std::max<Clock::duration>(budget_, gap * 2));
  }
}

}  // namespace murmur::fabric::libfabric
