// Traffic: posts sends and receives through a Communicator and counts bytes
// and messages per peer. Requests are counted when wait_all() returns them
// (so stats read after a round include all of it: on_done callbacks may run
// after a waiter wakes), or explicitly with count() / count_on_done() for
// requests nobody waits on (adpsgd). Every completed send is also timed, from
// posting to completion, for the scheduler's link estimates, on the
// Communicator's clock (now(): steady time over the fabric, virtual time in
// the simulator). Internal to algorithm/.
// Thread safety: all methods thread-safe; the counters' mutex is a leaf lock,
// also taken in on_done callbacks (on the backend's progress thread).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/communicator.h"

namespace murmur::gossip::detail {

class Traffic {
 public:
  explicit Traffic(Communicator& comm) : comm_(comm) { counters_->clock = &comm; }
  // Send callbacks that fire later (adpsgd's unwaited sends) stop reading
  // the clock: the communicator need only outlive this object.
  ~Traffic();
  Traffic(const Traffic&) = delete;
  Traffic& operator=(const Traffic&) = delete;
  Communicator& comm() { return comm_; }

  fabric::RequestPtr send(int peer, fabric::Tag tag, std::span<const std::byte> data);
  fabric::RequestPtr recv(int peer, fabric::Tag tag, std::span<std::byte> buffer);
  template <typename T>
  fabric::RequestPtr send(int peer, fabric::Tag tag, std::span<const T> data) {
    return send(peer, tag, std::as_bytes(data));
  }
  template <typename T>
  fabric::RequestPtr recv(int peer, fabric::Tag tag, std::span<T> buffer) {
    return recv(peer, tag, std::as_writable_bytes(buffer));
  }
  // Communicator::wait_all, then counts every request (all succeeded).
  void wait_all(const std::vector<fabric::RequestPtr>& requests, double timeout_s);
  // Counts one completed request (a no-op for a failed one).
  void count(const fabric::Request& done);
  // Counts the request when it completes, from its on_done callback.
  void count_on_done(const fabric::RequestPtr& request);
  std::map<int, LinkStats> links() const;
  // The timed sends since the last call, oldest first; at most
  // kMaxSendSamples are kept between calls.
  std::vector<TransferSample> take_send_samples();
  static constexpr std::size_t kMaxSendSamples = 4096;

 private:
  // Shared with the on_done callbacks, which may outlive this object when an
  // algorithm is torn down with receives still posted.
  struct Counters {
    std::mutex mutex;  // leaf lock
    std::map<int, LinkStats> links;
    std::deque<TransferSample> sends;
    Communicator* clock = nullptr;  // null once the Traffic is gone
  };
  Communicator& comm_;
  std::shared_ptr<Counters> counters_ = std::make_shared<Counters>();
};

}  // namespace murmur::gossip::detail
