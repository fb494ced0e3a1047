#include "fabric/libfabric/futile_round_backoff.h"

#include <time.h>

#include <algorithm>

namespace murmur::fabric::libfabric {

FutileRoundBackoff::Clock::duration FutileRoundBackoff::grace_for_chunk(std::size_t chunk_bytes) {
  // At most an hour: a chunk size near SIZE_MAX must not overflow the cast.
  const double seconds = std::min(3600.0, static_cast<double>(chunk_bytes) / kGraceLinkBytesPerSecond);
  const std::chrono::duration<double> chunk_time(seconds);
  return std::max<Clock::duration>(kMinGrace, std::chrono::duration_cast<Clock::duration>(chunk_time));
}

std::chrono::nanoseconds FutileRoundBackoff::thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

std::chrono::microseconds FutileRoundBackoff::note_idle_round(Clock::time_point now, Clock::duration slept) {
  if (slept >= kRestfulSleep) {
    in_stretch_ = false;
    return std::chrono::microseconds::zero();
  }
  if (!in_stretch_) {
    in_stretch_ = true;
    napping_ = false;
    stretch_start_ = now;
    stretch_cpu_start_ = cpu_clock_();
    slept_ = Clock::duration::zero();
    next_nap_ = kFirstNap;
    return std::chrono::microseconds::zero();
  }
  if (!napping_) {
    slept_ += slept;
    if (now - stretch_start_ < grace_ || cpu_clock_() - stretch_cpu_start_ <= slept_) {
      return std::chrono::microseconds::zero();
    }
    napping_ = true;
    napping_since_ = now;
  }
  if (now - napping_since_ >= kDeepNapAfter) {
    ++naps_;
    return kDeepNap;
  }
  const auto nap = next_nap_;
  next_nap_ = std::min(next_nap_ * 2, kMaxNap);
  ++naps_;
  return nap;
}

}  // namespace murmur::fabric::libfabric
