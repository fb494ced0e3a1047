// Ring all-reduce (sum) of several tensors at once, over the members of a
// view: the gradient methods' one collective. Each tensor goes through its
// own ring (reduce-scatter then all-gather, Patarasuk & Yuan 2009), and
// the tensors' ring steps are posted together, so that k tensors cost
// 2 (p - 1) round trips, not 2 k (p - 1): a credit window of partitions
// (bytescheduler-a2a) is k concurrent all-reduces on the wire.
//
// Every rank ends with bitwise the same sum (each chunk is summed at one
// rank, then copied). Sums in another chunking round differently: two
// methods that cut the same gradient differently agree to rounding only.
//
// Lost peers (tolerate = true): a failed link or an empty message where a
// chunk was due aborts the call on this rank, which then sends empty
// messages for the rest of it so that every live rank finishes (the rule
// of allreduce.cc); the tensors are left as they were and the call returns
// false. Without tolerate, a PeerError propagates.
//
// Blocking: returns when every ring step has completed (each wait bounded
// by timeout_s, communicator.h). The tensors are the caller's memory and
// are copied into messages: nothing is sent from them or received into
// them directly (message_buffer.h, the buffer rule).
// Internal to algorithm/. Thread safety: one call at a time per Traffic
// channel and tag set; the tensors must not be touched meanwhile.
#pragma once

#include <functional>
#include <set>
#include <span>
#include <vector>

#include "gossip/algorithm/traffic.h"

namespace murmur::gossip::detail {

struct RingTensor {
  std::span<float> data;  // summed in place
  fabric::Tag reduce_tag = 0;
  fabric::Tag gather_tag = 0;
};

// How the ring waits for one step's requests: Traffic::wait_all_excusing
// with the algorithm's timeout (RoundAlgorithm::wait_excusing and its twin
// in gradient_algorithm.h), returning the peers excused.
using RingWait = std::function<std::set<int>(const std::vector<fabric::RequestPtr>&)>;

// `members`: the ring, in order; `self` must be one of them. Returns false
// when a lost peer aborted the call (see above). Throws
// std::invalid_argument naming the rank and host that sent a chunk of the
// wrong size (tensors differ across ranks).
bool ring_allreduce_sum(Traffic& traffic, std::span<const int> members, int self, std::span<const RingTensor> tensors,
                        const RingWait& wait, bool tolerate);

}  // namespace murmur::gossip::detail
