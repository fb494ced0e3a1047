// Communicator: the only way gossip algorithms reach the network. Algorithms
// send, receive, wait and read the clock through it and never touch a
// fabric::Transport or a Group, so that a simulator with a virtual clock can
// run the very same algorithm code (it implements this interface).
//
// Contract (the Transport's, restated; see fabric/transport.h):
//   - isend / isendv / irecv never block; they return a Request that
//     completes later (isendv: one message of several buffers, send_pieces.h).
//     The buffer must stay valid (a send buffer unchanged) until it is done,
//     and after a peer failure for as long as the backend holds the request:
//     algorithms post through Traffic, whose requests retain their
//     MessageBuffer (fabric/transport.h, "Buffer rule").
//   - Messages between one (source, destination, tag) triple match in the
//     order they were posted. Tags come from make_tag() so that phases and
//     rounds never mix.
//   - wait_all() blocks (never spins) until every request is done. A failed
//     request's PeerError is rethrown once all have settled. When `timeout_s`
//     passes first, the peers still pending are declared failed (so every
//     request settles) and a PeerError naming the first of them is thrown:
//     an algorithm can fail, but it cannot hang.
//   - now() is seconds on a monotonic clock (steady_clock, or virtual time).
//   - Threads and local waits: an algorithm starts its own threads with
//     start_thread() / join_thread() and blocks on its own condition
//     variables only through wait_local() / notify_local(). The defaults are
//     the plain std:: calls. They are hooks because a simulator with a
//     virtual clock (sim/runtime/sim_communicator.h) runs every algorithm thread as a
//     simulated thread under one baton: it may advance the clock only when
//     every simulated thread is blocked, so it must see each block and each
//     wake, and it must not let a thread block the OS thread that holds the
//     baton (a plain cv.wait or join would stop the whole simulation).
//     wait_local() is called with `lock` held on the mutex that guards
//     `ready`, returns with it held and ready() true; notify_local() is
//     called after the state change, with or without the lock.
// Thread safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/background_thread.h"
#include "fabric/errors.h"
#include "fabric/request.h"
#include "fabric/send_pieces.h"

namespace murmur::gossip {

// What a message is for. One byte of the tag; values are part of the wire
// contract between peers of one job, so only append.
enum class Phase : std::uint8_t {
  kDpsgd = 1,
  kChoco = 2,
  kSgp = 3,
  kAdpsgd = 4,
  kAllreduce = 5,
  kAllgather = 6,
  kTopkAllgather = 7,
  kReceipt = 8,             // a receiver's report on one message (gossip/algorithm/receipt.h)
  kChocoResync = 9,         // choco's dense public copies after a membership view change
  kJoinState = 10,          // a joining member's model and state from its sponsor (peer/api/join_exchange.h)
  kGradientReduce = 11,     // the gradient methods' ring: reduce-scatter (ring_allreduce.h)
  kGradientGather = 12,     // ... and all-gather
  kGradientOrder = 13,      // bytescheduler-a2a: the leader's choice of the next partitions
  kLinkProbe = 14,          // mg-wfbp: the start-up all-reduces that measure alpha and beta
  kPsPush = 15,             // the parameter-server methods: a worker's gradient shard to its server
  kPsPull = 16,             // ... and the server's mean back to the worker
  kGradientAllgather = 17,  // signsgd, topk-sgd: each rank's compressed gradient to every other
};

// Tag layout: bits 63..56 channel (one per tensor stream / algorithm
// instance), 55..48 phase, 47..0 round (mod 2^48). Channel 0 is reserved for
// raw fabric users, and bit 63 for the transport (fabric::kBackendTagBit),
// so algorithms use channels 1..127.
inline constexpr std::uint8_t kMaxChannel = 127;

// Throws std::invalid_argument naming `owner` unless 1 <= channel <= 127.
inline void require_algorithm_channel(std::uint8_t channel, const std::string& owner) {
  if (channel == 0 || channel > kMaxChannel) {
    throw std::invalid_argument(owner + ": tag channel " + std::to_string(channel) +
                                " is reserved (0 for raw fabric users, 128..255 would set the transport's tag bit); "
                                "use 1..127");
  }
}

inline fabric::Tag make_tag(std::uint8_t channel, Phase phase, std::uint64_t round) {
  return (fabric::Tag{channel} << 56) | (fabric::Tag{static_cast<std::uint8_t>(phase)} << 48) |
         (round & ((fabric::Tag{1} << 48) - 1));
}

// The tag of the receipt for a message sent with `message`: channel kept,
// phase kReceipt, the message's phase in bits 47..40 and its round mod 2^40
// below, so that receipts of different phases and rounds never match each
// other's receives.
inline fabric::Tag receipt_tag(fabric::Tag message) {
  const fabric::Tag channel = message & (fabric::Tag{0xff} << 56);
  const fabric::Tag phase = (message >> 48) & 0xff;
  return channel | (fabric::Tag{static_cast<std::uint8_t>(Phase::kReceipt)} << 48) | (phase << 40) |
         (message & ((fabric::Tag{1} << 40) - 1));
}
inline bool is_receipt_tag(fabric::Tag tag) {
  return ((tag >> 48) & 0xff) == static_cast<std::uint8_t>(Phase::kReceipt);
}

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The peer's host name, for error messages ("rank 3 (node-7)").
  virtual std::string host(int peer) const = 0;

  fabric::RequestPtr isend(int peer, fabric::Tag tag, std::span<const std::byte> data) {
    return isendv(peer, tag, fabric::SendPieces(data.data(), data.size()));
  }
  // One message made of the pieces back to back (fabric/transport.h).
  virtual fabric::RequestPtr isendv(int peer, fabric::Tag tag, fabric::SendPieces pieces) = 0;
  virtual fabric::RequestPtr irecv(int peer, fabric::Tag tag, std::span<std::byte> buffer) = 0;

  // See the header comment. Does nothing for an empty span.
  virtual void wait_all(std::span<const fabric::RequestPtr> requests, double timeout_s) = 0;

  virtual double now() const = 0;

  // See "Threads and local waits" above. join_thread() blocks until the
  // thread's body has returned, then joins it.
  virtual std::thread start_thread(std::function<void()> body) { return start_background_thread(std::move(body)); }
  virtual void join_thread(std::thread& thread) { thread.join(); }
  virtual void wait_local(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          const std::function<bool()>& ready) {
    cv.wait(lock, ready);
  }
  virtual void notify_local(std::condition_variable& cv) { cv.notify_all(); }
};

// For implementations of wait_all: its timeout rule. Calls `fail_peer` once
// for each peer with a request still pending, in rank order, with the
// PeerError "no completion within <t> s (stalled or unreachable peer)".
inline void fail_stalled_peers(const Communicator& comm, std::span<const fabric::RequestPtr> requests, double timeout_s,
                               const std::function<void(int, std::exception_ptr)>& fail_peer) {
  std::set<int> stalled;
  for (const auto& r : requests)
    if (!r->test()) stalled.insert(r->peer());
  for (int peer : stalled) {
    std::ostringstream reason;
    reason << "no completion within " << timeout_s << " s (stalled or unreachable peer)";
    fail_peer(peer, std::make_exception_ptr(fabric::PeerError(peer, comm.host(peer), reason.str())));
  }
}

}  // namespace murmur::gossip
