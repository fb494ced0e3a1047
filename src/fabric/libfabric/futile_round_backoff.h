// FutileRoundBackoff: naps for a progress thread that the provider keeps
// awake without giving it anything to do.
//
// The progress thread sleeps only when the provider lets it: in fd mode,
// fi_trywait must succeed and the CQ's wait fd must stay quiet until a
// completion. A provider can keep saying "work pending" without ever
// completing anything, and then the loop goes round without sleeping:
// libfabric 1.17's "net" on its wait fd (its fi_trywait never resets the
// fd: a core per idle transport, which is why waiter.h blocks it in
// fi_cq_sread), and a fabric_bench hung by FI_TCP_PREFETCH_RBUF_SIZE=0,
// found with both progress threads at a full core each
// (docs/fabric-performance.md). SpinPolicy does not bound that loop: it
// bounds the polling murmur chooses to do, not the wake-ups a provider
// forces.
//
// So the thread accounts for a stretch of rounds without work: how long it
// lasted, how long it slept in the provider's waits, and how much CPU it
// used (its own clock). Time blocked on the progress role, or preempted
// outside a wait, counts as neither, so that a spin that other threads
// keep off the CPU (a loaded 2-core host) is still a spin. Once a stretch
// has lasted `grace` and the thread ran for longer than it slept, the
// provider is keeping it awake for nothing, and from then on each round
// naps: 50 us, then twice the last nap, up to 1 ms, and 8 ms (as
// waiter.h's polled waits when long idle) once it has napped for 100 ms.
// A nap listens for wake() (and, with a doorbell, the peers' rings), not
// for the provider's fd, which is what keeps waking the thread; a wait
// that wake() ended is not followed by a nap (the transport skips the
// round). Work ends the stretch, and so does a wait that sleeps 1 ms or
// more (the provider lets the thread block again: tcp does so after
// keeping it awake for ten-odd milliseconds while a connection comes up).
//
// Who never naps: an idle transport (it sleeps in the wait), a transfer on
// a slow link (it sleeps between packets), a transfer on a fast link,
// whose socket is always readable but which completes a chunk within the
// grace: the transport sizes it (at least 10 ms) from its chunk_bytes, as
// long as a chunk takes at 400 MB/s. What the naps may cost: a message
// that starts arriving while the thread naps is read a nap late at each
// round until its first chunk completes, which ends the napping (183-253
// naps per rank in a fabric_bench run of 4 MiB messages on such a
// provider). A spinning provider costs a round's CPU (tens of
// microseconds) per 8 ms: well under 1% of a core.
//
// Not thread-safe: the progress thread alone owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace murmur::fabric::libfabric {

class FutileRoundBackoff {
 public:
  using Clock = std::chrono::steady_clock;

  static constexpr std::chrono::microseconds kFirstNap{50};
  static constexpr std::chrono::microseconds kMaxNap{1000};
  // After napping this long, naps of kDeepNap.
  static constexpr std::chrono::milliseconds kDeepNapAfter{100};
  static constexpr std::chrono::microseconds kDeepNap{8000};
  // The slowest link whose chunks still complete within the grace.
  static constexpr double kGraceLinkBytesPerSecond = 400e6;
  static constexpr std::chrono::milliseconds kMinGrace{10};
  // A wait that slept this long was let block: the stretch ends.
  static constexpr std::chrono::milliseconds kRestfulSleep{1};

  // The calling thread's CPU time: CLOCK_THREAD_CPUTIME_ID (a system call,
  // about 160 ns here: read once a stretch, and again only past the grace).
  using CpuClock = std::function<std::chrono::nanoseconds()>;
  static std::chrono::nanoseconds thread_cpu_now();

  explicit FutileRoundBackoff(Clock::duration grace, CpuClock cpu_clock = thread_cpu_now)
      : grace_(grace), cpu_clock_(std::move(cpu_clock)) {}

  // The grace for a transport whose chunks are `chunk_bytes` long.
  static Clock::duration grace_for_chunk(std::size_t chunk_bytes);

  // A round did work: the stretch ends.
  void note_work() { in_stretch_ = false; }
  // A round found no work and slept `slept` in the provider's wait; it
  // ends at `now`: how long to nap before the next round (zero: none).
  std::chrono::microseconds note_idle_round(Clock::time_point now, Clock::duration slept);

  // Naps so far, for diagnostics and tests.
  std::uint64_t naps() const { return naps_; }

 private:
  const Clock::duration grace_;
  const CpuClock cpu_clock_;
  bool in_stretch_ = false;
  bool napping_ = false;
  Clock::time_point napping_since_{};
  Clock::time_point stretch_start_{};
  std::chrono::nanoseconds stretch_cpu_start_{};
  Clock::duration slept_{};  // in this stretch's waits
  std::chrono::microseconds next_nap_{kFirstNap};
  std::uint64_t naps_ = 0;
};

}  // namespace murmur::fabric::libfabric
