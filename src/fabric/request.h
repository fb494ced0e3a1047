// Request: the completion of one isend or irecv.
//
// Ownership: shared between the caller (who waits) and the backend (who
// completes it); a RequestPtr may be dropped at any time. The buffer it
// refers to must stay valid until the backend has let go of the request,
// which is when it is done (test() is true) except after a peer failure: see
// "Buffer rule" in transport.h. A caller whose buffer may be freed before
// the transport is destroyed hands the request a share of the buffer's
// ownership with retain(); the backend holds the request, and with it that
// share, for exactly as long as it may still touch the buffer.
//
// Thread safety: every method may be called from any thread. complete() or
// fail() is called exactly once, by the backend; later calls are ignored so
// that a failure racing a completion resolves to whichever came first.
//
// Blocking: test() never blocks. wait_until() blocks the calling thread on a
// condition variable until the request is done or the deadline passes; a
// backend with a ProgressDriver first lets the waiting thread make progress
// itself (below), polling for at most the backend's bounded spin. on_done()
// callbacks run on the completing thread (a backend's progress thread, or a
// thread waiting on another request of the same transport, see
// ProgressDriver) and must not block nor take a lock that a thread may hold
// while it waits on a request.
//
// Order of completion: the outcome (bytes(), error()) is set first, then the
// on_done callbacks run, and only then is the request done: test() turns
// true and waiters wake. So whatever a callback records (byte counts, send
// timings) is visible to a thread that has waited for the request. Inside
// a callback test() is still false; read the outcome from error() and
// bytes().
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

// Bit 63 of every tag is the backends' own: the libfabric engine sends a
// message's later chunks with it set, so that receives can post the next
// message's first chunk before the previous message's size is known
// (libfabric/engine.h). Callers' tags use bits 0..62; a request whose tag
// sets bit 63 is refused (std::invalid_argument from isend / irecv).
inline constexpr Tag kBackendTagBit = Tag{1} << 63;

class Request;

// A backend that can make progress on the thread that waits for a request
// (libfabric/transport.cc): the completion is then seen where it is awaited,
// without a hand-off from the progress thread (a wake-up each way).
class ProgressDriver {
 public:
  virtual ~ProgressDriver() = default;
  // Called by wait_until on the waiting thread before it blocks, with no
  // lock of the request held. May make progress, and so complete other
  // requests (running their callbacks on this thread), until `request` is
  // done, `deadline` passes, or the backend stops (its progress role is
  // taken, its bounded spin ran out); then returns, and wait_until blocks
  // as usual. Never throws; never blocks beyond the backend's spin.
  virtual void drive(const Request& request, Clock::time_point deadline) noexcept = 0;
};

class Request final {
 public:
  enum class Kind { kSend, kRecv };

  // Throws std::invalid_argument when `tag` sets kBackendTagBit: every
  // backend's isend / irecv makes its request here first, so the rule holds
  // for all of them.
  Request(Kind kind, int peer, Tag tag);
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
  // once test() is true (or inside an on_done callback) and the request did
  // not fail.
  std::size_t bytes() const;
  // The failure, or null. Valid once test() is true (or inside an on_done
  // callback).
  std::exception_ptr error() const;

  Kind kind() const { return kind_; }
  int peer() const { return peer_; }
  Tag tag() const { return tag_; }

  // Backend side. Exactly one of these takes effect; both wake waiters and
  // run the on_done callbacks on the calling thread.
  void complete(std::size_t bytes);
  void fail(std::exception_ptr error);

  // Runs `callback` once the request's outcome is known, before the request
  // is done (see "Order of completion"): immediately, on this thread, if the
  // outcome is known already.
  void on_done(std::function<void(Request&)> callback);

  // Backend side, before the request is handed out: who wait_until asks to
  // make progress. Not thread-safe: set once, before anyone waits.
  void set_driver(std::weak_ptr<ProgressDriver> driver) { driver_ = std::move(driver); }

  // Keeps `owner` (typically the owner of this request's buffer) alive for as
  // long as this Request lives. Call it right after isend / irecv, while the
  // caller still holds the buffer. Must not own this request (a cycle).
  void retain(std::shared_ptr<const void> owner);

 private:
  void finish(std::size_t bytes, std::exception_ptr error);

  const Kind kind_;
  const int peer_;
  const Tag tag_;
  std::weak_ptr<ProgressDriver> driver_;  // set before the request is shared
  mutable std::mutex mutex_;              // guards everything below; leaf lock
  std::condition_variable done_cv_;
  bool finished_ = false;  // the outcome is set; callbacks run or ran
  bool done_ = false;      // ... and they have all returned
  std::size_t bytes_ = 0;
  std::exception_ptr error_;
  std::vector<std::function<void(Request&)>> callbacks_;
  std::vector<std::shared_ptr<const void>> owners_;
};

using RequestPtr = std::shared_ptr<Request>;

// Waits for every request; returns false if the deadline passed before all
// were done. Rethrows the first failure met, after waiting for the rest (so
// no buffer is still in use by the backend when the caller unwinds).
bool wait_all(std::span<const RequestPtr> requests, Clock::time_point deadline);

}  // namespace murmur::fabric
