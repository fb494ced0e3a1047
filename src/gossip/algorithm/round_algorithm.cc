#include "gossip/algorithm/round_algorithm.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/check.h"
#include "common/log.h"
#include "common/thread_cpu_clock.h"
#include "common/trace.h"
#include "gossip/algorithm/round_failure.h"

namespace murmur::gossip::detail {

RoundAlgorithm::RoundAlgorithm(std::string name, const AlgorithmOptions& options, Communicator& comm,
                               bool default_overlap)
    : options_(options),
      comm_(comm),
      traffic_(comm, options.receipts),
      name_(std::move(name)),
      overlap_(options.overlap.value_or(default_overlap)),
      period_(options.period) {
  if (options_.period < 1)
    throw std::invalid_argument(name_ + ": period (H) must be >= 1, got " + std::to_string(options_.period));
  if (options_.warmup_steps < 0)
    throw std::invalid_argument(name_ + ": warm-up steps must be >= 0, got " + std::to_string(options_.warmup_steps));
  require_algorithm_channel(options_.channel, name_);
  worker_ = comm_.start_thread([this] { worker_loop(); });
}

RoundAlgorithm::~RoundAlgorithm() { shutdown(); }

void RoundAlgorithm::shutdown() {
  if (!worker_.joinable()) return;
  {
    std::unique_lock lock(mutex_);
    // A round in flight ends by itself: every wait in it is bounded by
    // options.timeout_s, after which its peers are declared failed.
    comm_.wait_local(lock, cv_, [&] { return !has_job_; });
    stop_ = true;
  }
  comm_.notify_local(cv_);
  comm_.join_thread(worker_);
}

void RoundAlgorithm::worker_loop() {
  trace::name_thread("gossip");
  std::unique_lock lock(mutex_);
  for (;;) {
    comm_.wait_local(lock, cv_, [&] { return stop_ || (has_job_ && job_round_ != ~0ULL); });
    if (stop_) return;
    std::uint64_t round = job_round_;
    job_round_ = ~0ULL;  // taken
    lock.unlock();
    const double start = comm_.now();
    const double cpu_start = thread_cpu_seconds();
    std::exception_ptr error;
    try {
      trace::Scope span(trace::Category::kGossip, "round");
      if (trace::enabled()) span.args().detail = "round " + std::to_string(round);
      run_round(round);
    } catch (...) {
      error = std::current_exception();
    }
    const double spent = comm_.now() - start;
    const double cpu_spent = thread_cpu_seconds() - cpu_start;
    lock.lock();
    stats_.comm_seconds += spent;
    stats_.comm_cpu_seconds += cpu_spent;
    job_error_ = error;
    has_job_ = false;
    comm_.notify_local(cv_);
  }
}

void RoundAlgorithm::check_not_failed() const {
  std::lock_guard lock(mutex_);
  if (failed_) std::rethrow_exception(failed_);
}

void RoundAlgorithm::complete_round(std::span<float> params) {
  MURMUR_CHECK(in_flight_);
  double start = comm_.now();
  std::exception_ptr error;
  {
    // The caller's thread blocked on its neighbours: the timeline's "waiting".
    trace::Scope span(trace::Category::kWait, "wait_for_round");
    std::unique_lock lock(mutex_);
    comm_.wait_local(lock, cv_, [&] { return !has_job_; });
    stats_.wait_seconds += comm_.now() - start;
    error = job_error_;
    job_error_ = nullptr;
    if (error) failed_ = error;
  }
  in_flight_ = false;
  if (error) rethrow_round_failure(name_, error);
  // What the round changed is how far this model was from the others: the
  // scheduler's local consensus signal, normalised by the local progress
  // since the last round's end (both scale with the learning rate).
  // Measured only once a scheduler tunes this algorithm, on at most
  // kMixingSamples values (all of a smaller model's; runs of kSampleRun
  // spread over a larger one): an RMS estimate needs no more, and copying a
  // large model twice per round would cost more than the round (BERT-Large:
  // 1.3 GB).
  std::uint64_t steps = 0;
  {
    std::lock_guard lock(mutex_);
    steps = stats_.steps;
  }
  if (!measure_mixing_ || params.empty()) {
    end_round(params);
  } else {
    // Runs of kSampleRun neighbours (one cache line) spread evenly: the
    // params are cold here (evicted while the step ran), and one value per
    // line cost a cache miss per value. A model of at most kMixingSamples
    // values is one run: all of it.
    const bool whole = params.size() <= kMixingSamples;
    const std::size_t runs = whole ? 1 : kMixingSamples / kSampleRun;
    const std::size_t run = whole ? params.size() : kSampleRun;
    const std::size_t samples = runs * run;
    auto sample = [&](std::vector<float>& into) {
      into.resize(samples);
      // Run r starts at r * size / runs: as many runs in each part of the
      // model as its share of the values.
      for (std::size_t r = 0; r < runs; ++r)
        std::copy_n(params.data() + r * params.size() / runs, run, into.data() + r * run);
    };
    sample(before_end_);
    if (after_end_.size() == samples && steps > steps_at_end_) {
      double local = 0;
      for (std::size_t k = 0; k < samples; ++k) {
        const double d = static_cast<double>(before_end_[k]) - after_end_[k];
        local += d * d;
      }
      local_step_rms_.store(std::sqrt(local / static_cast<double>(samples)) /
                            static_cast<double>(steps - steps_at_end_));
    }
    end_round(params);
    sample(after_end_);
    double squares = 0;
    for (std::size_t k = 0; k < samples; ++k) {
      const double d = static_cast<double>(after_end_[k]) - before_end_[k];
      squares += d * d;
    }
    mixing_rms_.store(std::sqrt(squares / static_cast<double>(samples)));
    steps_at_end_ = steps;
  }
  std::lock_guard lock(mutex_);
  ++stats_.rounds;
}

std::set<int> RoundAlgorithm::wait_excusing(const std::vector<fabric::RequestPtr>& requests) {
  auto excused = traffic_.wait_all_excusing(requests, options_.timeout_s, options_.tolerate_lost_peers);
  if (!excused.empty()) {
    incomplete_rounds_.fetch_add(1);
    for (int peer : excused)
      if (excused_logged_.insert(peer).second)
        gossip_log().warn("{}: rounds go on without rank {} ({}) until a view drops it: its link failed", name_, peer,
                          comm_.host(peer));
  }
  return excused;
}

void RoundAlgorithm::retune(const Tuning& tuning) {
  measure_mixing_ = true;
  if (tuning.period > 0) period_.store(tuning.period);
  if (tuning.ratio > 0 && tunes_ratio()) set_ratio(tuning.ratio, tuning.trial_ratio);
}

void RoundAlgorithm::step(std::span<float> params) {
  MURMUR_CHECK(!finished_);
  check_not_failed();
  if (expected_parameters_ != 0) {
    if (params.size() != expected_parameters_)
      throw std::invalid_argument(name_ + ": the saved state is for " + std::to_string(expected_parameters_) +
                                  " parameters, the tensor has " + std::to_string(params.size()));
    expected_parameters_ = 0;
  }
  std::uint64_t step = 0;
  {
    std::lock_guard lock(mutex_);
    step = ++stats_.steps;
  }
  // Counted from the last communicating step, so that a retuned period takes
  // effect at the same step on every rank that applies it at the same step.
  // Every step of the warm-up communicates (gossip_options.h).
  const bool warming_up = step <= static_cast<std::uint64_t>(options_.warmup_steps);
  if (++steps_since_round_ < period_.load() && !warming_up) return;
  steps_since_round_ = 0;
  if (in_flight_) complete_round(params);
  if (gate_) {
    if (auto change = gate_->before(next_round_)) {
      // A joining member enters at the view's first round.
      next_round_ = std::max(next_round_, change->first_round);
      if (change->exchange_params) change->exchange_params(params, next_round_);
      adopt_view(*change);
      view_generation_.store(change->view.generation);
    }
  }
  if (before_round_) before_round_();
  begin_round(params);
  parameters_ = params.size();
  {
    std::lock_guard lock(mutex_);
    has_job_ = true;
    job_round_ = next_round_++;
  }
  comm_.notify_local(cv_);
  in_flight_ = true;
  if (!overlap_) complete_round(params);
}

void RoundAlgorithm::flush(std::span<float> params) {
  check_not_failed();
  if (in_flight_) complete_round(params);
}

void RoundAlgorithm::finish(std::span<float> params) {
  if (finished_) return;
  flush(params);
  finished_ = true;
}

namespace {
constexpr std::uint32_t kDriverStateVersion = 1;
}

std::string RoundAlgorithm::save_state() const {
  MURMUR_CHECK(!in_flight_);  // flush() first
  StateWriter w(name_, parameters_, kDriverStateVersion * 1000 + state_version());
  {
    std::lock_guard lock(mutex_);
    w.u64(stats_.steps);
  }
  w.u64(static_cast<std::uint64_t>(steps_since_round_));
  w.u64(static_cast<std::uint64_t>(period_.load()));
  w.u64(graph_round_offset_ + next_round_);
  save_own(w);
  return w.take();
}

void RoundAlgorithm::load(std::string_view state, bool other_view) {
  MURMUR_CHECK(next_round_ == 0 && !in_flight_);  // before the first round
  StateReader r(state, name_, kDriverStateVersion * 1000 + state_version());
  const std::uint64_t steps = r.u64("steps");
  const std::uint64_t since = r.u64("steps since the last round");
  const std::uint64_t period = r.u64("period");
  const std::uint64_t rounds = r.u64("rounds");
  if (period < 1 || period > 1'000'000 || since >= period || rounds > steps)
    throw std::invalid_argument(name_ + ": saved state has period " + std::to_string(period) + ", " +
                                std::to_string(since) + " steps into it, " + std::to_string(rounds) + " rounds in " +
                                std::to_string(steps) + " steps: not a state this algorithm writes");
  load_own(r, other_view);  // finishes the reader, then commits
  {
    std::lock_guard lock(mutex_);
    stats_.steps = steps;
  }
  steps_since_round_ = static_cast<int>(since);
  period_.store(static_cast<int>(period));
  graph_round_offset_ = rounds;
  expected_parameters_ = r.elements();
}

AlgorithmStats RoundAlgorithm::stats() const {
  AlgorithmStats s;
  {
    std::lock_guard lock(mutex_);
    s = stats_;
  }
  s.links = traffic_.links();
  s.incomplete_rounds = incomplete_rounds_.load();
  s.view_generation = view_generation_.load();
  add_stats(s);
  return s;
}

}  // namespace murmur::gossip::detail
