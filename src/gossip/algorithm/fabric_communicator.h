// FabricCommunicator: a Communicator over a fabric::Transport (what a Group
// opens). It does not own the transport, which must outlive it.
//
// Timeouts: a wait_all() that runs past its timeout calls
// Transport::fail_peer() on each peer still pending, with a PeerError
// "no completion within <t> s (stalled peer?)": the backend then fails those
// requests, so every request has settled before the error reaches the
// algorithm (their buffers stay owned by the requests: fabric/transport.h,
// "Buffer rule"). The peer stays failed for this transport, as a dead one
// would.
// Thread safety: as the transport's (all methods thread-safe).
#pragma once

#include <vector>

#include "fabric/transport.h"
#include "gossip/algorithm/communicator.h"

namespace murmur::gossip {

class FabricCommunicator final : public Communicator {
 public:
  // `peers` (optional) gives host names for messages; empty: "?".
  explicit FabricCommunicator(fabric::Transport& transport, std::vector<fabric::PeerInfo> peers = {});

  int rank() const override;
  int size() const override;
  std::string host(int peer) const override;
  fabric::RequestPtr isend(int peer, fabric::Tag tag, std::span<const std::byte> data) override;
  fabric::RequestPtr irecv(int peer, fabric::Tag tag, std::span<std::byte> buffer) override;
  void wait_all(std::span<const fabric::RequestPtr> requests, double timeout_s) override;
  double now() const override;

 private:
  fabric::Transport& transport_;
  std::vector<fabric::PeerInfo> peers_;
};

}  // namespace murmur::gossip
