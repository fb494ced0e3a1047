// SpinWaitDriver: the ProgressDriver of a backend whose progress only its
// own thread can make (asio: one io_context thread reads every socket; the
// libfabric backend's callers on shm use poll_request() alone, see
// libfabric/transport.cc). The waiting thread cannot make progress itself,
// but it can look: it polls its request, yielding the core between polls,
// for at most `max_spin` before wait_until sleeps on the request's
// condition variable. A completion that comes within the spin then costs
// the waiter no wake-up (a switch out and one back, some 10 us each on a
// loaded 2-core host); on asio's 8-byte round trip that was about a
// quarter of the time (docs/fabric-performance.md).
//
// Yielding, not a pause instruction: with fewer cores than busy threads the
// poller would starve the io thread that completes its request.
//
// Thread safety: stateless after construction; any number of threads may
// drive at once. Never blocks beyond `max_spin`.
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>

#include "fabric/request.h"

namespace murmur::fabric {

class SpinWaitDriver final : public ProgressDriver {
 public:
  // `max_spin` zero: never polls (wait_until sleeps at once).
  explicit SpinWaitDriver(std::chrono::microseconds max_spin) : max_spin_(max_spin) {}

  void drive(const Request& request, Clock::time_point deadline) noexcept override {
    poll_request(request, deadline, max_spin_);
  }

  // Polls `request` until it is done, `deadline` passes or `max_spin` has.
  static void poll_request(const Request& request, Clock::time_point deadline,
                           std::chrono::microseconds max_spin) noexcept {
    if (max_spin.count() <= 0) return;
    const auto end = std::min(deadline, Clock::now() + max_spin);
    while (!request.test() && Clock::now() < end) ::sched_yield();
  }

 private:
  const std::chrono::microseconds max_spin_;
};

}  // namespace murmur::fabric
