// The checks every backend makes on what connect() and add_peer() are given
// (transport.h, "Life cycle" and "Joining a running job"), and the error an
// absent rank fails with, so that all backends accept and refuse the same
// lists with the same words.
//
// Pure functions; thread-safe; nothing blocks.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "fabric/transport.h"

namespace murmur::fabric {

// True for an entry of connect()'s list that marks an absent rank.
inline bool is_absent(const PeerInfo& peer) { return peer.rank == -1; }

// Throws FabricError, prefixed with `backend` and naming the bad entry,
// unless peers.size() == size and every peers[r] is rank r (with an
// address) or absent, and peers[self] is live.
void check_peer_list(const std::vector<PeerInfo>& peers, int size, int self, const std::string& backend);

// Throws FabricError, prefixed with `backend`, unless add_peer(peer) may
// proceed on a transport of rank `self` and `size` ranks: after connect(),
// a rank not known yet (>= size), with an address.
void check_new_peer(const PeerInfo& peer, int size, int self, bool connected, const std::string& backend);

// The PeerError an absent rank fails with: it names the rank, its host (or
// "unknown host") and `why`.
std::exception_ptr absent_peer_error(int rank, const std::string& host,
                                     const std::string& why = "not a member: lost before this process joined");

// The `why` for a rank that add_peer(joined) skipped over.
std::string skipped_rank_reason(int joined);

}  // namespace murmur::fabric
