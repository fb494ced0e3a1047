// RoundAlgorithm: the shared driver of the synchronous-round algorithms
// (dpsgd, choco, sgp, allreduce, topk-allreduce, local-sgd). It counts steps,
// runs one round at a time on its own communication thread, and implements
// the overlap rules of algorithm.h:
//
//   communicating step:  [round r-1 in flight] -> wait, end_round(params)
//                        begin_round(params)   -> snapshot on the caller thread
//                        run_round(r)          -> on the communication thread
//                        [no overlap]          -> wait, end_round(params)
//
// Subclasses implement the three hooks. begin_round and end_round run on the
// caller's thread while no round is in flight; run_round runs on the
// communication thread and may touch only what begin_round prepared and what
// end_round will read (the hand-over is ordered by the driver's mutex).
// The communication thread is started, joined, waited on and woken only
// through the Communicator's start_thread / join_thread / wait_local /
// notify_local, so that a simulator sees every block (communicator.h).
// Internal to algorithm/.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/state_blob.h"
#include "gossip/algorithm/traffic.h"

namespace murmur::gossip::detail {

class RoundAlgorithm : public Algorithm {
 public:
  ~RoundAlgorithm() override;

  std::string name() const override { return name_; }
  void step(std::span<float> params) override;
  void flush(std::span<float> params) override;
  void finish(std::span<float> params) override;
  AlgorithmStats stats() const override;

  bool tunes_period() const override { return true; }
  // Period now; ratio through set_ratio() when tunes_ratio().
  void retune(const Tuning& tuning) override;
  void set_before_round(std::function<void()> hook) override { before_round_ = std::move(hook); }
  int period() const override { return period_.load(); }
  void set_views(ViewSchedule* views) override { gate_ = views; }
  std::vector<TransferSample> take_transfer_samples() override { return traffic_.take_send_samples(); }
  double last_mixing_rms() const override { return mixing_rms_.load(); }
  double last_local_step_rms() const override { return local_step_rms_.load(); }
  // The driver's part (steps, the position in the period, the period, the
  // rounds run: the phase of a time-varying graph), then the subclass's
  // (save_own). Header element count: the parameters of the last round.
  std::string save_state() const final;
  void load_state(std::string_view state) final { load(state, /*other_view=*/false); }
  void load_state_from_other_view(std::string_view state) final { load(state, /*other_view=*/true); }

 protected:
  RoundAlgorithm(std::string name, const AlgorithmOptions& options, Communicator& comm, bool default_overlap);

  virtual void begin_round(std::span<const float> params) = 0;
  virtual void run_round(std::uint64_t round) = 0;
  virtual void end_round(std::span<float> params) = 0;
  // Waits for the round in flight and stops the communication thread.
  // Idempotent. Every final subclass calls it first in its destructor, so
  // that run_round never outlives the members it uses.
  void shutdown();

  // Adds algorithm-specific numbers; called from stats() on any thread.
  virtual void add_stats(AlgorithmStats&) const {}
  // A new compression ratio from retune(), on the caller thread; subclasses
  // that tunes_ratio() apply it from their next begin_round, or from the one
  // after when `trial_ratio` > 0 (which the next begin_round uses alone, even
  // if set_ratio is called again without a trial before it).
  virtual void set_ratio(double /*ratio*/, double /*trial_ratio*/) {}
  // A new membership view takes effect before round change.first_round.
  // Caller thread, no round in flight: replace the graph and members, drop
  // the state of lost neighbours, prepare what new ones need.
  virtual void adopt_view(const ViewChange& change) = 0;

  // The subclass's part of save_state()/load_state(), caller thread, no
  // round in flight. load_own reads exactly what save_own wrote (same
  // state_version()), calls reader.finish(), and only then changes
  // anything (a blob refused leaves the algorithm as it was); `other_view`:
  // see Algorithm::load_state_from_other_view.
  virtual std::uint32_t state_version() const { return 1; }
  virtual void save_own(StateWriter&) const {}
  virtual void load_own(StateReader&, bool /*other_view*/) {}
  // The round of the time-varying graph for round `round` of this run:
  // rounds restart at 0 on resume, the graph's sequence goes on.
  std::uint64_t graph_round(std::uint64_t round) const { return graph_round_offset_ + round; }

  // Traffic::wait_all_excusing with this algorithm's timeout and
  // tolerate_lost_peers; counts the round as incomplete when it excused
  // anyone. Communication thread.
  std::set<int> wait_excusing(const std::vector<fabric::RequestPtr>& requests);

  fabric::Tag tag(Phase phase, std::uint64_t round) const { return make_tag(options_.channel, phase, round); }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

  const AlgorithmOptions options_;
  Communicator& comm_;
  Traffic traffic_;

 private:
  void worker_loop();
  void complete_round(std::span<float> params);
  void check_not_failed() const;
  void load(std::string_view state, bool other_view);

  const std::string name_;
  const bool overlap_;
  std::atomic<int> period_;             // written on the caller thread, read anywhere
  int steps_since_round_ = 0;           // caller thread only
  std::function<void()> before_round_;  // caller thread only
  ViewSchedule* gate_ = nullptr;        // caller thread only
  std::atomic<std::uint64_t> view_generation_{0};
  std::atomic<std::uint64_t> incomplete_rounds_{0};
  std::set<int> excused_logged_;  // communication thread only: peers already logged
  bool measure_mixing_ = false;   // caller thread only: set by the first retune()
  // Values of params sampled for the consensus signal (complete_round), in
  // runs of kSampleRun neighbours spread evenly over a larger model. 512
  // runs estimate an RMS to a few percent (neighbours are correlated; the
  // guard acts at 2x). The sampling runs on
  // the caller's thread every round on cold params: 65,536 values one per
  // stride cost about 0.25 ms a step for 8 peers on 2 cores (perf), nearly
  // all of it cache misses.
  static constexpr std::size_t kMixingSamples = 8192;
  static constexpr std::size_t kSampleRun = 16;  // one 64-byte cache line of floats
  std::vector<float> before_end_;                // caller thread only: sampled params before end_round
  std::vector<float> after_end_;                 // caller thread only: sampled params after the last end_round
  std::uint64_t steps_at_end_ = 0;               // caller thread only: stats_.steps then
  std::atomic<double> mixing_rms_{0};
  std::atomic<double> local_step_rms_{0};
  std::uint64_t next_round_ = 0;  // caller thread only
  // Rounds run before a resume (load_state): written before the first round,
  // read by run_round (ordered by the driver's mutex).
  std::uint64_t graph_round_offset_ = 0;
  std::size_t parameters_ = 0;           // caller thread only: size at the last begin_round
  std::size_t expected_parameters_ = 0;  // caller thread only: from load_state, checked at the first step
  bool in_flight_ = false;               // caller thread only
  bool finished_ = false;                // caller thread only

  // Lock order: mutex_ is taken alone (never while calling out).
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool has_job_ = false;  // a round is queued or running
  bool stop_ = false;
  std::uint64_t job_round_ = 0;
  std::exception_ptr job_error_;
  std::exception_ptr failed_;  // sticky: rethrown by every later call
  AlgorithmStats stats_;       // steps, rounds, wait_seconds, comm_seconds
  std::thread worker_;         // last: started (comm_.start_thread) when everything above exists
};

}  // namespace murmur::gossip::detail
