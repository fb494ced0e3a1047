// All-gather of variable-size byte messages (compressed tensors: top-k,
// signs), by direct sends: each member sends its message to every other,
// and receives every other's into a buffer of `capacity` bytes. Used by
// topk-allreduce (allreduce.cc) and signsgd / topk-sgd
// (compressed_gradients.cc).
//
// Blocking: returns once every message has arrived or its peer was
// excused by `wait` (ring_allreduce.h's RingWait: bounded by the
// algorithm's timeout; a PeerError propagates unless lost peers are
// tolerated). Buffers follow message_buffer.h's rule.
// Internal to algorithm/. Thread safety: one call at a time per tag.
#pragma once

#include <span>
#include <vector>

#include "gossip/algorithm/ring_allreduce.h"

namespace murmur::gossip::detail {

// `inbox` is indexed by rank (at least max(members) + 1 long) and
// inbox[self] holds this rank's message. On return inbox[k] holds member
// k's message, empty when k was lost. Returns true when none was lost.
bool allgather_messages(Traffic& traffic, std::span<const int> members, int self, fabric::Tag tag, std::size_t capacity,
                        std::vector<MessageBuffer<std::byte>>& inbox, const RingWait& wait);

}  // namespace murmur::gossip::detail
