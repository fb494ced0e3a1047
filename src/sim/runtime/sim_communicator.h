// SimNetwork and SimCommunicator: the gossip::Communicator of murmur-sim.
// Every rank's algorithm talks through a SimCommunicator; all of them share
// one SimNetwork, which matches sends with receives and times each message
// with the NetworkModel on the VirtualRuntime's clock. How murmur-sim uses
// them (proxy vectors, byte_scale, what it predicts): docs/sim.md,
// "murmur's gossip, run for real".
//
//   VirtualRuntime rt;
//   NetworkModel model(cluster);
//   SimNetwork net(rt, model, /*byte_scale=*/gradient_bytes / proxy_bytes);
//   rt.spawn("rank 0", [&] { SimCommunicator comm(net, 0); auto a = make_algorithm(..., comm, ...); ... });
//   rt.run();
//
// Messages: isend copies the data when it is posted (the caller may reuse
// its buffer as soon as the send completes) and asks the NetworkModel when
// it arrives, for its real size times byte_scale (a receipt,
// gossip::is_receipt_tag, at its real size). At that time the send
// completes (a send completes when delivered, as tcp does in the fabric) and
// so does the oldest receive posted for its (source, destination, tag), with
// a copy into its buffer; a message that finds no receive waits for one and
// completes it when it is posted. Request::bytes() is the real size (the
// algorithms check it); the NetworkModel counts simulated bytes. A message
// larger than the receive buffer fails the receive with a PeerError, as the
// fabric does. Messages of one (source, destination, tag) arrive in posting
// order (the NetworkModel's queues are FIFO).
//
// wait_all: blocks the calling simulated thread (cancellable, see
// virtual_runtime.h) until every request is done, or until timeout_s
// VIRTUAL seconds pass; then, like FabricCommunicator, the peers still
// pending are declared failed by this rank (their requests with this rank
// fail with PeerError "no completion within <t> s (stalled or unreachable
// peer)"; every later request of this rank with them fails with "declared
// failed earlier by rank <this rank>") and the first failure in request
// order is rethrown. Messages already on the wire from
// this rank still reach the failed peer. When the wait is cancelled (another
// simulated thread failed, see virtual_runtime.h), its pending peers are
// declared failed too (their requests fail with SimCancelled) before it
// propagates, so that no
// receive writes into a buffer the unwinding frees.
//
// Threads and local waits (Communicator::start_thread and friends): every
// thread an algorithm starts is a simulated thread of the runtime, and its
// local waits are baton hand-offs, so the clock sees them.
//
// host(peer) is "sim-node-<node>". now() is the virtual clock.
// Thread safety: every method with the runtime's baton held (from a
// simulated thread or an event); Request callbacks run with it too. The
// SimNetwork must outlive its communicators and the runtime's run().
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gossip/algorithm/communicator.h"
#include "sim/network_model.h"
#include "sim/runtime/virtual_runtime.h"

namespace murmur::sim::runtime {

class SimNetwork final {
 public:
  // `byte_scale` > 0 multiplies every message's size (receipts excepted:
  // they are 24 bytes whatever the proxy stands for) before timing and
  // counting it (see gossip_run.h for why).
  SimNetwork(VirtualRuntime& runtime, NetworkModel& model, double byte_scale = 1.0);

  VirtualRuntime& runtime() { return runtime_; }
  const NetworkModel& model() const { return model_; }
  int size() const { return model_.cluster().gpus; }
  double byte_scale() const { return byte_scale_; }
  std::string host(int rank) const;

  fabric::RequestPtr isend(int src, int dst, fabric::Tag tag, const fabric::SendPieces& pieces);
  fabric::RequestPtr irecv(int dst, int src, fabric::Tag tag, std::span<std::byte> buffer);
  // `rank` declares `peer` failed: fails every pending request between them
  // that belongs to `rank`, and every later one. (SimCommunicator::wait_all
  // does, on its timeout.)
  void fail_peer(int rank, int peer, std::exception_ptr error);

 private:
  struct PostedRecv {
    fabric::RequestPtr request;
    std::span<std::byte> buffer;
  };
  // One (destination, source, tag): receives waiting for messages, or
  // messages waiting for receives (never both).
  struct Channel {
    std::deque<PostedRecv> receives;
    std::deque<std::vector<std::byte>> arrived;
  };
  using ChannelKey = std::pair<int, fabric::Tag>;  // source, tag (per destination)
  struct ChannelHash {
    std::size_t operator()(const ChannelKey& k) const {
      return std::hash<std::uint64_t>()(k.second * 0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(k.first));
    }
  };

  void deliver(int src, int dst, fabric::Tag tag, std::vector<std::byte>& data, const fabric::RequestPtr& send);
  void fill(const PostedRecv& recv, int src, fabric::Tag tag, const std::vector<std::byte>& data);
  bool failed(int rank, int peer) const;
  std::exception_ptr refused(int rank, int peer) const;

  VirtualRuntime& runtime_;
  NetworkModel& model_;
  const double byte_scale_;
  // Hashed, per rank: the lookups of every message are the simulator's hot
  // path at 1024 peers. Iteration order (fail_peer only) is fixed by the
  // insertion order, so runs stay reproducible.
  std::vector<std::unordered_map<ChannelKey, Channel, ChannelHash>> channels_;  // by destination
  // Sends on the wire by source, then destination, in arrival order. Empty
  // queues are kept: the same pairs talk every round.
  std::vector<std::unordered_map<int, std::deque<fabric::RequestPtr>>> in_flight_;
  std::vector<std::set<int>> failed_;  // failed_[rank]: peers `rank` declared failed
};

class SimCommunicator final : public gossip::Communicator {
 public:
  SimCommunicator(SimNetwork& network, int rank);

  int rank() const override { return rank_; }
  int size() const override { return network_.size(); }
  std::string host(int peer) const override { return network_.host(peer); }
  fabric::RequestPtr isendv(int peer, fabric::Tag tag, fabric::SendPieces pieces) override;
  fabric::RequestPtr irecv(int peer, fabric::Tag tag, std::span<std::byte> buffer) override;
  void wait_all(std::span<const fabric::RequestPtr> requests, double timeout_s) override;
  double now() const override { return network_.runtime().now(); }

  std::thread start_thread(std::function<void()> body) override;
  void join_thread(std::thread& thread) override;
  void wait_local(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  const std::function<bool()>& ready) override;
  void notify_local(std::condition_variable& cv) override;

 private:
  SimNetwork& network_;
  const int rank_;
  int threads_started_ = 0;
};

}  // namespace murmur::sim::runtime
