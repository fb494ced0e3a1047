// Request: the completion of one isend or irecv.
//
// Ownership: shared between the caller (who waits) and the backend (who
// completes it); a RequestPtr may be dropped at any time, but the buffer it
// refers to must stay valid until the request is done (test() is true), as
// with MPI and libfabric.
//
// Thread safety: every method may be called from any thread. complete() or
// fail() is called exactly once, by the backend; later calls are ignored so
// that a failure racing a completion resolves to whichever came first.
//
// Blocking: test() never blocks. wait_until() blocks the calling thread on a
// condition variable (no spinning) until the request is done or the deadline
// passes. on_done() callbacks run on the completing thread (a backend's
// progress thread) and must not block.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace murmur::fabric {

using Tag = std::uint64_t;
using Clock = std::chrono::steady_clock;

class Request final {
 public:
  enum class Kind { kSend, kRecv };

  Request(Kind kind, int peer, Tag tag) : kind_(kind), peer_(peer), tag_(tag) {}
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // True once the request has completed or failed. Never blocks.
  bool test() const;

  // Blocks until the request is done or `deadline` passes. Returns false if
  // the deadline passed first (the request stays pending). If the request
  // failed, rethrows its error (a PeerError for link faults).
  bool wait_until(Clock::time_point deadline);
  bool wait_for(Clock::duration timeout) { return wait_until(Clock::now() + timeout); }

  // Bytes moved: for a receive, the size of the message that arrived. Valid
  // once test() is true and the request did not fail.
  std::size_t bytes() const;
  // The failure, or null. Valid once test() is true.
  std::exception_ptr error() const;

  Kind kind() const { return kind_; }
  int peer() const { return peer_; }
  Tag tag() const { return tag_; }

  // Backend side. Exactly one of these takes effect; both wake waiters and
  // run the on_done callbacks on the calling thread.
  void complete(std::size_t bytes);
  void fail(std::exception_ptr error);

  // Runs `callback` once the request is done: immediately, on this thread,
  // if it already is.
  void on_done(std::function<void(Request&)> callback);

 private:
  void finish(std::size_t bytes, std::exception_ptr error);

  const Kind kind_;
  const int peer_;
  const Tag tag_;
  mutable std::mutex mutex_;  // guards everything below; leaf lock
  std::condition_variable done_cv_;
  bool done_ = false;
  std::size_t bytes_ = 0;
  std::exception_ptr error_;
  std::vector<std::function<void(Request&)>> callbacks_;
};

using RequestPtr = std::shared_ptr<Request>;

// Waits for every request; returns false if the deadline passed before all
// were done. Rethrows the first failure met, after waiting for the rest (so
// no buffer is still in use by the backend when the caller unwinds).
bool wait_all(std::span<const RequestPtr> requests, Clock::time_point deadline);

}  // namespace murmur::fabric
