#include "gossip/algorithm/fabric_communicator.h"

#include <chrono>

#include "fabric/errors.h"

namespace murmur::gossip {

FabricCommunicator::FabricCommunicator(fabric::Transport& transport, std::vector<fabric::PeerInfo> peers)
    : transport_(transport), peers_(std::move(peers)) {}

int FabricCommunicator::rank() const { return transport_.rank(); }
int FabricCommunicator::size() const { return transport_.size(); }

std::string FabricCommunicator::host(int peer) const {
  if (peer >= 0 && peer < static_cast<int>(peers_.size())) return peers_[peer].host;
  return "?";
}

fabric::RequestPtr FabricCommunicator::isend(int peer, fabric::Tag tag, std::span<const std::byte> data) {
  return transport_.isend(peer, tag, data.data(), data.size());
}

fabric::RequestPtr FabricCommunicator::irecv(int peer, fabric::Tag tag, std::span<std::byte> buffer) {
  return transport_.irecv(peer, tag, buffer.data(), buffer.size());
}

void FabricCommunicator::wait_all(std::span<const fabric::RequestPtr> requests, double timeout_s) {
  if (requests.empty()) return;
  auto deadline = fabric::Clock::now() +
                  std::chrono::duration_cast<fabric::Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::exception_ptr error;
  try {
    if (fabric::wait_all(requests, deadline)) return;
  } catch (...) {
    // fabric::wait_all rethrows a failure even when other requests are still
    // pending at the deadline; those are released below before unwinding.
    error = std::current_exception();
  }
  // Stalled: fail the pending peers so that every request settles.
  fail_stalled_peers(*this, requests, timeout_s,
                     [this](int peer, std::exception_ptr e) { transport_.fail_peer(peer, std::move(e)); });
  std::exception_ptr later;
  try {
    // Backends fail pending requests of a failed peer promptly; bound it anyway.
    if (!fabric::wait_all(requests, fabric::Clock::now() + std::chrono::seconds(30)))
      throw fabric::FabricError("gossip: requests still pending 30 s after their peers were declared failed");
  } catch (...) {
    later = std::current_exception();
  }
  if (error) std::rethrow_exception(error);
  if (later) std::rethrow_exception(later);
  // Every request completed without error after all (a completion raced the
  // deadline): the round is whole.
}

double FabricCommunicator::now() const {
  return std::chrono::duration<double>(fabric::Clock::now().time_since_epoch()).count();
}

}  // namespace murmur::gossip
