#include "peer/train/peer_state_sections.h"

#include "gossip/algorithm/state_blob.h"

namespace murmur::peer::train {

// The layout is the Peer's (peer.cc, Impl::save_state): name "peer",
// version 1, the algorithm's bytes, then the scheduler's.
void split_peer_state(std::string_view peer_state, std::string& algorithm_state, std::string& schedule_state) {
  gossip::StateReader r(peer_state, "peer", 1);
  algorithm_state = r.bytes("algorithm state");
  schedule_state = r.bytes("scheduler state");
  r.finish();
}

std::string join_peer_state(const std::string& algorithm_state, const std::string& schedule_state,
                            std::size_t parameters) {
  gossip::StateWriter w("peer", parameters, 1);
  w.bytes(algorithm_state);
  w.bytes(schedule_state);
  return w.take();
}

}  // namespace murmur::peer::train
