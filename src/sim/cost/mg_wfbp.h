// MG-WFBP's merged-gradient buckets (Shi, Chu, Li, "MG-WFBP: Efficient Data
// Communication for Distributed Synchronous SGD Algorithms", INFOCOM 2019):
// with an all-reduce that costs a + b * beta for b bytes, a tensor whose
// all-reduce could not start before the next gradient is ready anyway should
// wait for it and go in one message, saving one startup a.
// Pure function; thread-safe.
#pragma once

#include <vector>

namespace murmur::sim::cost {

struct ReadyTensor {
  int layer = 0;  // forward index
  double bytes = 0;
  double ready_s = 0;  // when its gradient is ready
};

// `tensors` in the order their gradients become ready (backward order).
// Returns buckets of indices into `tensors`, in sending order.
std::vector<std::vector<int>> merge_buckets(const std::vector<ReadyTensor>& tensors, double startup_s,
                                            double seconds_per_byte);

}  // namespace murmur::sim::cost
