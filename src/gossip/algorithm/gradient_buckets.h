// MG-WFBP's merge rule (Shi, Chu and Li, "MG-WFBP: Efficient Data
// Communication for Distributed Synchronous SGD Algorithms", INFOCOM 2019)
// as a pure function, so that it can be tested without a network.
//
// The model: an all-reduce of m bytes takes alpha + beta m (alpha: the
// start-up cost, beta: seconds per byte, both of the whole collective);
// layer l's gradient is ready at ready_s[l] (seconds, any origin); the
// backward pass hands layers over from the last to the first, and the
// buckets are all-reduced one at a time in that order. Walking back from
// the last layer, the bucket in hand would start its all-reduce at
// start = max(when the link is free, when its layers are ready). If that
// start is later than ready_s[l - 1] - alpha, waiting for layer l - 1 and
// sending both together costs less than the second start-up it saves
// (merged: one alpha; apart: the link is still busy, or nearly so, when
// layer l - 1 arrives), so the next layer joins the bucket; otherwise the
// bucket is closed and its all-reduce runs while backward goes on.
// Thread safety: pure.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "gossip/algorithm/gradient_algorithm.h"

namespace murmur::gossip::detail {

struct AllreduceCost {
  double alpha_s = 0;          // start-up, seconds
  double beta_s_per_byte = 0;  // seconds per byte
};

// Buckets of consecutive layers, in communication order (the bucket with
// the last layer first). Every layer is in exactly one bucket. Same inputs,
// same buckets: ranks that agree on the inputs agree on the buckets.
std::vector<LayerRange> merge_gradient_buckets(std::span<const double> ready_s,
                                               std::span<const std::size_t> layer_bytes, AllreduceCost cost);

}  // namespace murmur::gossip::detail
