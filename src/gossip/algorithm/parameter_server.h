// ParameterServer: the server role of the parameter-server methods (bsp-ps,
// wfbp-ps, bytescheduler-ps), co-located with a worker as BytePS runs it:
// a thread of its own in every serving rank, talking over the same
// Communicator (and Traffic) as the worker. It holds no state between
// steps: the workers hold the model and apply the optimizer; a server only
// sums what the workers push for a step and sends the mean back.
//
//   comm thread (worker):  begin_round(r, members)  expect(mine)  push/pull ...  end_round()
//   server thread:                                  serve shard 1, shard 2, ... (in expect() order)
//
// Serving one shard: wait for the pushes of every other member (their
// receives are posted at expect()), and for the co-located worker's
// (push_local, in memory: no message to itself); check each (size; the
// tag names the round and shard, and receives are posted only for the
// view's members, so nothing else matches); sum them in member order;
// send the mean to every other member (tag kPsPull) and hand it to the
// co-located worker (pull_local). Shards are served in the order of the
// expect() calls: every worker pushes in that same order (the methods
// make the same calls on every rank), so a server never waits for a shard
// that a worker holds back until it has pulled a later one.
//
// Lost workers (tolerate_lost_peers): a push that fails is left out, and
// the mean is over the pushes that arrived (every worker that pulls it
// still gets the same value, so the models stay equal); end_round() then
// reports the round incomplete. Without tolerate, the PeerError fails the
// server: pull_local() and end_round() rethrow it. A push of the wrong
// size is an std::invalid_argument naming the sending rank and host.
//
// Threads: begin_round, expect, push_local, pull_local and end_round on the
// worker's communication thread (one round at a time; end_round returns
// before the next begin_round); stop() from any thread. Internal to
// algorithm/.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gossip/algorithm/ring_allreduce.h"
#include "gossip/algorithm/traffic.h"

namespace murmur::gossip::detail {

struct PsShard {
  std::uint32_t id = 0;
  std::size_t floats = 0;
};

class ParameterServer {
 public:
  // The tag of shard `id`'s push or pull in round `round`.
  using TagOf = std::function<fabric::Tag(Phase, std::uint64_t round, std::uint32_t id)>;
  // `wait` is the algorithm's wait (ring_allreduce.h's RingWait: bounded by
  // its timeout, excusing lost peers when tolerated). `name` prefixes errors.
  ParameterServer(std::string name, Traffic& traffic, RingWait wait, TagOf tag);
  ~ParameterServer();  // stop(), then joins the thread
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  void begin_round(std::uint64_t round, std::vector<int> members);
  // The shards this server serves next, in push order; posts their receives.
  void expect(std::span<const PsShard> shards);
  // The co-located worker's push (copied) and pull (blocks until served).
  void push_local(std::uint32_t id, std::span<const float> values);
  void pull_local(std::uint32_t id, std::span<float> into);
  // Blocks until every expected shard is served and its means are sent.
  // Returns false when a lost worker's push was left out this round.
  bool end_round();
  // Abandons the round (the algorithm is torn down): every wait returns.
  void stop();

 private:
  struct Job {
    PsShard shard;
    std::vector<int> from;  // remote members, in member order
    std::vector<MessageBuffer<float>> pushes;
    std::vector<fabric::RequestPtr> receives;
  };
  void loop();
  void serve(Job& job);
  bool stopped_locked() const { return stop_ || error_ != nullptr; }
  void rethrow_locked() const;

  const std::string name_;
  Traffic& traffic_;
  Communicator& comm_;
  const RingWait wait_;
  const TagOf tag_;
  std::uint64_t round_ = 0;  // communication thread writes between rounds
  std::vector<int> members_;
  std::vector<fabric::RequestPtr> sends_;  // server thread only: this round's pulls

  // Lock order: mutex_ is a leaf (never held while waiting on the network).
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // expected, not served yet (front: next)
  std::map<std::uint32_t, std::vector<float>> local_push_, local_pull_;
  bool closing_ = false;     // end_round() waits for the queue to drain
  bool round_done_ = false;  // ... and the server has sent everything
  bool incomplete_ = false;  // a push was left out this round
  bool stop_ = false;
  std::exception_ptr error_;  // sticky
  std::thread thread_;        // last
};

}  // namespace murmur::gossip::detail
