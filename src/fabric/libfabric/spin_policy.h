// SpinPolicy: whether the progress thread polls once more or blocks, when a
// turn found nothing to do. A blocked thread costs an epoll wake-up (and
// often a context switch onto a busy core) before it sees a completion: tens
// of microseconds, several times a loopback socket's round trip. Polling
// for a while catches a completion that is about to arrive, but a thread
// that polls for every receive still posted (a gossip neighbour that
// computes for 100 ms) would burn a core.
//
// So the spin is bounded and adaptive: only while operations are
// outstanding (an idle transport never spins), for at most `budget`, which
// learns from the recent gaps between "nothing to do" and the next work:
//   - work arrived while polling (a hit): budget doubles, up to max_spin;
//   - the budget ran out (a miss): budget halves (below 1 us: zero), then
//     the thread blocks as before;
//   - the thread blocked but work came within max_spin anyway: polling
//     would have caught it, so budget becomes max(budget, 2 x that gap),
//     capped at max_spin. This is how a budget that fell to zero comes back.
// A miss costs at most the budget of CPU; a run of misses (long waits)
// drives it to zero within log2(max_spin) stretches.
//
// Not thread-safe: the progress thread alone owns it.
#pragma once

#include <chrono>

namespace murmur::fabric::libfabric {

class SpinPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  // max_spin zero: never poll (the thread blocks at once, as before).
  explicit SpinPolicy(std::chrono::microseconds max_spin) : max_(max_spin), budget_(max_spin) {}

  // A turn found nothing to do at `now`; `outstanding`: operations are in
  // flight. True: poll again now; false: block.
  bool keep_polling(Clock::time_point now, bool outstanding);
  // A turn did work (a completion, a post) at `now`.
  void note_work(Clock::time_point now);

  Clock::duration budget() const { return budget_; }

 private:
  const Clock::duration max_;
  Clock::duration budget_;
  bool in_stretch_ = false;  // since the last work, nothing to do
  bool blocked_ = false;     // ... and this stretch's polling ended
  bool learning_ = false;    // ... and it began with operations outstanding
  Clock::time_point stretch_start_{};
};

}  // namespace murmur::fabric::libfabric
