// ComputeEstimator: seconds of computation per training step, the time that
// a round's communication may hide behind. The median of the last `window`
// steps: an evaluation pass, a checkpoint or a page fault inflates one step
// and must not make the scheduler think there is room for dense messages.
//
//   ComputeEstimator compute(9);
//   compute.observe(step_seconds);          // after each local update
//   double s = compute.seconds_per_step();  // 0 until the first step
//
// Threads: not thread-safe; one owner. No call blocks.
#pragma once

#include <cstddef>
#include <deque>

#include "gossip/algorithm/state_blob.h"

namespace murmur::gossip::schedule {

class ComputeEstimator {
 public:
  // MURMUR_CHECKs window >= 1.
  explicit ComputeEstimator(std::size_t window = 9);
  // MURMUR_CHECKs seconds >= 0 and finite.
  void observe(double seconds);
  double seconds_per_step() const { return median_; }
  std::size_t samples() const { return recent_.size(); }
  // A checkpoint's copy: the recent steps (load() keeps the last `window`;
  // throws std::invalid_argument for a negative or non-finite one).
  void save(StateWriter& w) const;
  void load(StateReader& r);

 private:
  std::size_t window_;
  std::deque<double> recent_;
  double median_ = 0;
};

}  // namespace murmur::gossip::schedule
