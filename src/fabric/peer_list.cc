#include "fabric/peer_list.h"

#include "fabric/errors.h"

namespace murmur::fabric {

void check_peer_list(const std::vector<PeerInfo>& peers, int size, int self, const std::string& backend) {
  if (static_cast<int>(peers.size()) != size) {
    throw FabricError(backend + ": connect got " + std::to_string(peers.size()) + " peers for a group of size " +
                      std::to_string(size));
  }
  for (int r = 0; r < size; ++r) {
    const PeerInfo& peer = peers[r];
    if (is_absent(peer)) {
      if (r == self)
        throw FabricError(backend + ": connect: peers[" + std::to_string(r) + "] is this rank, marked absent");
      continue;
    }
    if (peer.rank != r) {
      throw FabricError(backend + ": connect: peers[" + std::to_string(r) + "] has rank " + std::to_string(peer.rank) +
                        " (expected " + std::to_string(r) + ", or -1 for an absent rank)");
    }
    if (peer.address.empty()) {
      throw FabricError(backend + ": connect: rank " + std::to_string(r) + " (" + peer.host + ") has no address");
    }
  }
}

void check_new_peer(const PeerInfo& peer, int size, int self, bool connected, const std::string& backend) {
  const std::string who = "rank " + std::to_string(peer.rank) + " (" + peer.host + ")";
  const std::string where = backend + " rank " + std::to_string(self) + ": add_peer " + who;
  if (!connected) throw FabricError(where + " before connect()");
  if (peer.rank < 0) throw FabricError(where + ": not a rank");
  if (peer.rank < size) {
    throw FabricError(where + ": that rank is or was a member of this group of " + std::to_string(size) +
                      " (ids are never reused: a restarted process joins with a new rank >= " + std::to_string(size) +
                      ")");
  }
  if (peer.address.empty()) throw FabricError(where + ": no address");
}

std::exception_ptr absent_peer_error(int rank, const std::string& host, const std::string& why) {
  return std::make_exception_ptr(PeerError(rank, host.empty() ? "unknown host" : host, why));
}

std::string skipped_rank_reason(int joined) {
  return "not a member: skipped when rank " + std::to_string(joined) + " joined (ids are never reused)";
}

}  // namespace murmur::fabric
