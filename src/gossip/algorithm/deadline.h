// How long a silent peer is given before it is suspected lost (issue 18),
// derived from how long this rank's rounds have actually waited.
//
// A fixed timeout is wrong everywhere but where it was tuned: too short on a
// slow network (healthy peers get suspected), far too long on a fast one (a
// lost peer stalls the job for a minute). So the deadline follows the waits:
//
//   deadline = clamp(multiplier * percentile(last `window` waits), floor, ceiling)
//
// and is the floor until min_samples waits were observed (the first rounds
// include connection set-up and say nothing about the steady state).
//
// Why the defaults:
//   - floor 2 s: a stopped (SIGSTOPped) or dead peer is confirmed by its
//     missing rendezvous heartbeats within about 1.5 s; suspecting earlier
//     than that only produces suspicions the membership service cannot back.
//   - multiplier 8 over p99: a healthy round's wait has a long tail that the
//     window may not hold yet: an epoch-end evaluation on one rank, or a
//     GC-like pause when several peers share a 2-core host, stretches a wait
//     several times past its p99. 8x keeps those from raising suspicion while
//     still catching a lost peer within seconds on a fast network.
//   - p99 rather than the maximum: a single outlier in the window (one slow
//     round) barely moves it, so one hiccup does not stretch the deadline for
//     the next 256 rounds.
//   - ceiling 60 s: the old fixed timeout; a job never waits longer than it
//     used to.
//   - window 256 rounds: long enough for a p99 to mean something (the 3
//     largest waits are above it), short enough to follow a network whose
//     speed changes within minutes.
//   - min_samples 16: below that, a p99 is the maximum of a few waits.
//
// Thread-safety: every member may be called from any thread (one mutex, held
// for O(window); lock order: it is a leaf, nothing is called under it).
// Nothing blocks beyond that lock.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace murmur::gossip {

struct DeadlineOptions {
  double multiplier = 8;         // > 0
  double percentile = 0.99;      // in (0, 1]; nearest rank
  double floor_s = 2;            // > 0
  double ceiling_s = 60;         // >= floor_s
  std::size_t window = 256;      // the most recent waits kept, >= 1
  std::size_t min_samples = 16;  // the floor until this many, in [1, window]
};

class FailureDeadline {
 public:
  // Throws std::invalid_argument naming the field out of range.
  explicit FailureDeadline(DeadlineOptions options);

  // One completed wait: how long a round waited for its neighbours, in
  // seconds (>= 0 and finite; anything else is a bug: InvariantError).
  void observe(double wait_seconds);

  // The current deadline in seconds, in [floor_s, ceiling_s].
  double deadline_s() const;

  // Waits observed so far (all of them, not only the window's).
  std::size_t samples() const;

  const DeadlineOptions& options() const { return options_; }

 private:
  const DeadlineOptions options_;
  mutable std::mutex mutex_;   // guards everything below
  std::vector<double> waits_;  // ring buffer of at most options_.window
  std::size_t next_ = 0;       // where the next wait goes once full
  std::size_t observed_ = 0;
  mutable double cached_s_ = 0;  // valid while !stale_
  mutable bool stale_ = true;
};

}  // namespace murmur::gossip
