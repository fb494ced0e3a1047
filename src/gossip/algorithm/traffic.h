// Traffic: posts sends and receives through a Communicator and counts bytes
// and messages per peer. Requests are counted when wait_all() returns them,
// or explicitly with count() / count_on_done() for requests nobody waits on
// (adpsgd). Every completed send is also timed, from posting to completion,
// in its on_done callback (which runs before a waiter wakes, request.h: a
// round's samples are all there once its wait_all() returns), for the
// scheduler's link estimates, on the
// Communicator's clock (now(): steady time over the fabric, virtual time in
// the simulator).
//
// Receipts (constructed with receipts = true, AlgorithmOptions::receipts):
// each receive is timed too, and wait_all() answers every completed receive
// with a receipt (receipt.h) to its sender as soon as all of the call's
// receives are in; each send posts a receive for its receipt, and its
// TransferSample is released (take_send_samples) only once the receipt has
// arrived, with receiver_seconds from it. A malformed receipt releases the
// sample without it (logged once per peer, with its rank and host); a failed
// one (the peer failed, or the transport went away) drops the sample. Every
// request, receipts included, retains its buffer (fabric/transport.h,
// "Buffer rule"). At most kMaxPendingReceipts receipts are awaited per
// peer; sends beyond that are sampled without one, with a warning naming the
// peer (one that does not send receipts: every rank must agree on
// AlgorithmOptions::receipts). Receipts are counted in the links' stats.
// Every receive of a Traffic with receipts must be waited through its
// wait_all(), or its sender waits for a receipt in vain; a receive that
// arrived is answered even when the wait fails.
//
// Internal to algorithm/.
// Thread safety: all methods thread-safe; the counters' mutex is a leaf lock,
// also taken in on_done callbacks (on the backend's progress thread).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/communicator.h"
#include "gossip/algorithm/message_buffer.h"

namespace murmur::gossip::detail {

class Traffic {
 public:
  explicit Traffic(Communicator& comm, bool receipts = false) : comm_(comm), receipts_(receipts) {
    counters_->clock = &comm;
  }
  // Send callbacks that fire later (adpsgd's unwaited sends, receipts) stop
  // reading the clock: the communicator need only outlive this object.
  ~Traffic();
  Traffic(const Traffic&) = delete;
  Traffic& operator=(const Traffic&) = delete;
  Communicator& comm() { return comm_; }

  // Posts a send of `part` (all of `buffer` when omitted), a span inside
  // `buffer`; the request retains the buffer (message_buffer.h).
  template <typename T>
  fabric::RequestPtr send(int peer, fabric::Tag tag, const MessageBuffer<T>& buffer, std::span<const T> part) {
    return send_bytes(peer, tag, std::as_bytes(part), buffer.owner());
  }
  template <typename T>
  fabric::RequestPtr send(int peer, fabric::Tag tag, const MessageBuffer<T>& buffer) {
    return send(peer, tag, buffer, std::span<const T>(*buffer));
  }
  template <typename T>
  fabric::RequestPtr recv(int peer, fabric::Tag tag, const MessageBuffer<T>& buffer, std::span<T> part) {
    return recv_bytes(peer, tag, std::as_writable_bytes(part), buffer.owner());
  }
  template <typename T>
  fabric::RequestPtr recv(int peer, fabric::Tag tag, const MessageBuffer<T>& buffer) {
    return recv(peer, tag, buffer, buffer.span());
  }
  // The same for storage an algorithm manages itself: `owner` owns `data`
  // and is retained by the request. Never null.
  fabric::RequestPtr send_bytes(int peer, fabric::Tag tag, std::span<const std::byte> data,
                                std::shared_ptr<const void> owner);
  fabric::RequestPtr recv_bytes(int peer, fabric::Tag tag, std::span<std::byte> buffer,
                                std::shared_ptr<const void> owner);
  // Communicator::wait_all, then counts every request (all succeeded). With
  // receipts: the receives first, then their receipts are sent, then the
  // rest, both waits within timeout_s from the call.
  void wait_all(const std::vector<fabric::RequestPtr>& requests, double timeout_s);
  // The same, for a job whose membership may change (AlgorithmOptions::
  // tolerate_lost_peers): a PeerError does not end the round. Returns the
  // peers whose requests failed (every request has settled); the caller
  // goes on without their messages until the view that drops them. Other
  // exceptions propagate. With `tolerate` false, exactly wait_all().
  std::set<int> wait_all_excusing(const std::vector<fabric::RequestPtr>& requests, double timeout_s, bool tolerate);
  // Counts one completed request (a no-op for a failed one).
  void count(const fabric::Request& done);
  // Counts the request when it completes, from its on_done callback.
  void count_on_done(const fabric::RequestPtr& request);
  std::map<int, LinkStats> links() const;
  // The timed sends since the last call, in the order they were released
  // (completion, or with receipts the receipt's arrival: end_time may then
  // step back a little); at most kMaxSendSamples are kept between calls.
  std::vector<TransferSample> take_send_samples();
  static constexpr std::size_t kMaxSendSamples = 4096;
  static constexpr std::size_t kMaxPendingReceipts = 256;

 private:
  struct PendingSend;
  struct ReceiveTiming {
    double posted = 0;
    double done = -1;  // -1 until the receive's on_done ran
  };
  // Shared with the on_done callbacks, which may outlive this object when an
  // algorithm is torn down with receives still posted.
  struct Counters {
    std::mutex mutex;  // leaf lock
    std::map<int, LinkStats> links;
    std::deque<TransferSample> sends;
    Communicator* clock = nullptr;                                       // null once the Traffic is gone
    std::map<int, std::size_t> receipts_awaited;                         // by peer
    std::unordered_map<const fabric::Request*, ReceiveTiming> receives;  // until their receipt is sent
    std::set<int> warned;  // peers warned about once (a malformed receipt, or none answered)
  };
  // Posts the receive for the receipt of a send to `peer` with `tag`; null
  // when kMaxPendingReceipts are awaited from the peer already.
  std::shared_ptr<PendingSend> expect_receipt(int peer, fabric::Tag tag);
  void send_receipts(const std::vector<fabric::RequestPtr>& receives);
  static void push_sample(Counters& c, const TransferSample& s);
  static void release(Counters& c, PendingSend& p);

  Communicator& comm_;
  const bool receipts_;
  std::shared_ptr<Counters> counters_ = std::make_shared<Counters>();
};

}  // namespace murmur::gossip::detail
