// What a training peer that joins a running job takes from its sponsor
// besides the model (PeerConfig::join_state / on_join_state): where the
// job is (step, epoch, step within it, the epoch's length, the length the
// learning-rate schedule was made for) and the optimizer's momentum. The
// joiner continues from the step after the sponsor's.
//
// Encoding: one JSON line (the numbers), then the momentum as raw
// little-endian floats. decode_join_state checks every field (the bytes
// come from the network) and throws std::invalid_argument naming the one
// that does not fit. Values; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace murmur::peer::train {

struct JoinState {
  std::int64_t step = 0;                      // the sponsor's step in progress (0-based)
  int epoch = 0;                              // its epoch (0-based)
  std::int64_t step_in_epoch = 0;             // its step within the epoch (0-based)
  std::int64_t steps_per_epoch = 0;           // the epoch's length in the view that admits the joiner
  std::int64_t schedule_steps_per_epoch = 0;  // what the learning-rate schedule was made for
  std::uint64_t partition_generation = 0;     // the view the sponsor's shard was cut for
  std::vector<float> momentum;                // empty or one per parameter
};

std::string encode_join_state(const JoinState& state);
// `parameters`: the joiner's own count (the momentum must match it).
JoinState decode_join_state(const std::string& bytes, std::size_t parameters, int epochs);

}  // namespace murmur::peer::train
