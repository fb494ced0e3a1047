// The Peer's saved state (Peer::save_state: one blob holding the gossip
// algorithm's and the scheduler's) as the two sections of a checkpoint file,
// and back. Throws std::invalid_argument for a blob that is not the Peer's.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace murmur::peer::train {

void split_peer_state(std::string_view peer_state, std::string& algorithm_state, std::string& schedule_state);
std::string join_peer_state(const std::string& algorithm_state, const std::string& schedule_state,
                            std::size_t parameters);

}  // namespace murmur::peer::train
