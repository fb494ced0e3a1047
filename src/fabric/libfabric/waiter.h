// Waiter: how the progress thread sleeps when it has nothing to do, without
// spinning a core.
//
// With a CQ wait fd: fi_trywait(cq), then epoll_wait on {cq fd, eventfd}.
// Without one (providers that refuse FI_WAIT_FD, like shm in 1.17): epoll
// on the eventfd alone with a timeout that doubles from 50 us to 2 ms while
// idle (8 ms after a second of idleness), and drops back to 50 us as soon as
// there was work. With a doorbell (doorbell.h: shm, rung by the peers when
// they post to this endpoint or complete a receive from it, and by wake()),
// the same timeouts bound a futex wait on it instead, so that a message
// wakes the thread at once; and when nothing but a ring can bring work
// (nothing in flight, or only receives from peers that ring, with
// single-copy transfers: Engine::only_rings_bring_work) the thread sleeps
// on it for the caller's whole wait. Anything else in flight (a send,
// whose CMA response no ring announces; a receive by SAR segments; a
// failed operation; a post the provider refused for now) keeps the
// back-off, and before each of its sleeps the thread rings the receivers
// of its sends (Engine::ring_receivers_of_sends).
//
// While callers poll the CQ themselves (transport.cc, cq_left_to_callers),
// fd mode sleeps on the eventfd alone (wait_for_wake), so that their
// completions do not wake this thread too.
//
// In the CQ's own blocking read (`sread`, for libfabric 1.17's native tcp
// RDM provider "net"): fi_cq_sread for no entries, woken by fi_cq_signal.
// That provider's fi_trywait never resets the CQ's wait fd, which stays
// readable after the first completion: an epoll on it returned at once and
// the thread burnt half a core while idle. Its sread does reset it, and
// blocks in the provider's own epoll on its sockets. (endpoint.cc picks
// sread for "net"; $MURMUR_FABRIC_CQ_WAIT overrides the pick.) A provider
// that keeps the thread awake for nothing all the same gets naps instead
// (nap(), futile_round_backoff.h): on the eventfd, or with a doorbell on
// the doorbell, which wake() ends in every mode (in sread mode it writes
// the eventfd as well as signalling the CQ).
//
// wake() may be called from any thread; everything else only from the
// progress thread. may_block() calls into the provider and needs the
// transport's progress role (transport.cc); wait() does not hold it, so
// that a caller can drive progress meanwhile: in sread mode it calls the
// provider concurrently with the role's holder, which the endpoint allows
// (FI_THREAD_SAFE, endpoint.cc).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <chrono>
#include <cstdint>

#include "fabric/libfabric/doorbell.h"

namespace murmur::fabric::libfabric {

class Waiter {
 public:
  // `cq_fd` is -1 when the CQ has no wait fd; `sread`: block in
  // fi_cq_sread instead of on `cq_fd` (see above). Throws FabricError.
  // `bell` (polled mode only; not owned, outlives this): see above.
  Waiter(fid_fabric* fabric, fid_cq* cq, int cq_fd, bool sread = false, Doorbell* bell = nullptr);
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;
  ~Waiter();

  // Wakes a current or the next wait() or nap(). Thread-safe, never blocks.
  void wake();

  // The last round did work: the next polled wait starts short again.
  void note_busy() {
    backoff_ = kMinBackoff;
    idle_rounds_ = 0;
  }

  // Progress thread, before it looks for work: a doorbell rung after this
  // ends the next wait() at once.
  void before_looking() {
    if (bell_ != nullptr) bell_seen_ = bell_->value();
  }

  // With the progress role held, right before wait(): false when the
  // provider still has work (fd mode: fi_trywait failed), so the thread
  // must not sleep.
  bool may_block();
  // Blocks until the CQ may have entries, wake() was called, or `max_wait`
  // passed (polled mode: the back-off, if shorter, unless a doorbell
  // announces all there can be: `only_rings_bring_work`, see above).
  // Never spins. Returns whether wake() (with a doorbell: a ring) came
  // before it returned, so that the caller looks for work before a nap.
  bool wait(std::chrono::microseconds max_wait, bool only_rings_bring_work = false);

  // Whether wait_for_wake() can be used: fd mode (the CQ has a wait fd,
  // which that wait leaves out; neither sread nor polled).
  bool can_leave_cq() const { return cq_fd_ >= 0 && !sread_; }
  // Blocks until wake() or `timeout`, not on the CQ: while callers poll
  // the CQ themselves, its completions are theirs to see. Fd mode only.
  // Returns whether wake() ended it.
  bool wait_for_wake(std::chrono::microseconds timeout);
  // Blocks until wake() (with a doorbell: a ring since before_looking())
  // or `timeout`, whatever the provider's fd says: the nap of a thread the
  // provider keeps awake for nothing (futile_round_backoff.h). Any mode.
  void nap(std::chrono::microseconds timeout);

  static constexpr std::chrono::microseconds kMinBackoff{50};
  static constexpr std::chrono::microseconds kMaxBackoff{2000};
  // After about a second without work, polls every 8 ms: a quiet transport
  // then costs well under 1% of a core, at the price of up to 8 ms latency
  // for the first message that ends the quiet spell.
  static constexpr std::chrono::microseconds kDeepIdleBackoff{8000};
  static constexpr int kDeepIdleRounds = 500;

 private:
  void drain_eventfd();

  fid_fabric* fabric_;
  fid_cq* cq_;
  int cq_fd_;
  bool sread_;
  int event_fd_ = -1;
  int epoll_fd_ = -1;
  std::chrono::microseconds backoff_{50};
  int idle_rounds_ = 0;
  Doorbell* bell_ = nullptr;
  std::uint32_t bell_seen_ = 0;
};

}  // namespace murmur::fabric::libfabric
