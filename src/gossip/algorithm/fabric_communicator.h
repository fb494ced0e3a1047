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
// Failure detection (set_failure_detector, for a job whose membership may
// change): a wait reports each peer whose request failed (its link broke) to
// `suspect` once, and reports each peer still pending after the deadline
// derived from observed waits (FailureDeadline) as silent, again after every
// further deadline, while it keeps waiting: the membership service decides
// whether the peer is lost (its heartbeats stopped too), and if so the
// peer's requests fail and the wait returns. Completed waits feed the
// deadline. timeout_s remains the ceiling, with the behaviour above.
// Thread safety: as the transport's (all methods thread-safe);
// set_failure_detector before any wait.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fabric/transport.h"
#include "gossip/algorithm/communicator.h"
#include "gossip/algorithm/deadline.h"

namespace murmur::gossip {

class FabricCommunicator final : public Communicator {
 public:
  // `peers` (optional) gives host names for messages; empty: "?".
  explicit FabricCommunicator(fabric::Transport& transport, std::vector<fabric::PeerInfo> peers = {});

  int rank() const override;
  int size() const override;
  std::string host(int peer) const override;
  fabric::RequestPtr isendv(int peer, fabric::Tag tag, fabric::SendPieces pieces) override;
  fabric::RequestPtr irecv(int peer, fabric::Tag tag, std::span<std::byte> buffer) override;
  void wait_all(std::span<const fabric::RequestPtr> requests, double timeout_s) override;
  double now() const override;

  struct FailureDetector {
    FailureDeadline* deadline = nullptr;  // must outlive this communicator
    std::function<void(int peer, bool silent, const std::string& reason)> suspect;
  };
  void set_failure_detector(FailureDetector detector);

 private:
  void wait_detecting(std::span<const fabric::RequestPtr> requests, double timeout_s);
  void fail_stalled(std::span<const fabric::RequestPtr> requests, double timeout_s, std::exception_ptr error);

  fabric::Transport& transport_;
  std::vector<fabric::PeerInfo> peers_;
  FailureDetector detector_;
};

}  // namespace murmur::gossip
