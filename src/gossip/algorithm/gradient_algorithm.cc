#include "gossip/algorithm/gradient_algorithm.h"

#include <algorithm>
#include <stdexcept>

#include "common/check.h"
#include "common/log.h"
#include "common/thread_cpu_clock.h"
#include "gossip/algorithm/ps_exchange.h"
#include "gossip/algorithm/round_failure.h"

namespace murmur::gossip::detail {
namespace {

// Thrown inside communicate() when the algorithm is torn down while the
// round waits for layers the caller will never hand over (it failed
// between gradient_ready() and average_gradients()).
struct RoundAbandoned {};

}  // namespace

GradientAlgorithm::GradientAlgorithm(std::string name, const AlgorithmOptions& options, Communicator& comm,
                                     Exchange exchange)
    : options_(options), comm_(comm), traffic_(comm, options.receipts), name_(std::move(name)) {
  require_algorithm_channel(options_.channel, name_);
  if (options_.period != 1)
    throw std::invalid_argument(name_ + " averages the gradients of every step: period (H) must be 1, got " +
                                std::to_string(options_.period) + " (local-sgd averages models every H steps)");
  for (int k = 0; k < comm.size(); ++k) members_.push_back(k);
  if (exchange == Exchange::kParameterServer) {
    if (options_.ps_servers < 0)
      throw std::invalid_argument(name_ + ": --servers " + std::to_string(options_.ps_servers) +
                                  " must be >= 0 (0: every member serves)");
    if (options_.ps_partition < 1)
      throw std::invalid_argument(name_ + ": --ps-partition " + std::to_string(options_.ps_partition) +
                                  " must be >= 1 (floats)");
    ps_ = std::make_unique<ParameterServerExchange>(
        name_, traffic_, [this](const auto& r) { return wait_excusing(r); },
        [this](Phase phase, std::uint64_t round, std::uint32_t id) { return task_tag(phase, round, id); },
        options_.ps_servers, static_cast<std::size_t>(options_.ps_partition), [this] { return tensor_sizes(); });
  }
  worker_ = comm_.start_thread([this] { worker_loop(); });
}

GradientAlgorithm::~GradientAlgorithm() { shutdown(); }

void GradientAlgorithm::shutdown() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;  // a round waiting for layers gives up; one on the wire ends within timeout_s
  }
  comm_.notify_local(cv_);
  if (ps_) ps_->abandon();  // so does one waiting for this rank's server
  {
    std::unique_lock lock(mutex_);
    comm_.wait_local(lock, cv_, [&] { return !has_job_; });
  }
  comm_.join_thread(worker_);
}

void GradientAlgorithm::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    comm_.wait_local(lock, cv_, [&] { return stop_ || (has_job_ && job_round_ != ~0ULL); });
    if (!has_job_ && stop_) return;
    if (job_round_ == ~0ULL) return;  // stop_ with nothing to run
    const std::uint64_t round = job_round_;
    job_round_ = ~0ULL;  // taken
    lock.unlock();
    // The thread's CPU time in the round: its waits (for layers, for
    // messages) cost none, so this is the round's own work.
    const double cpu_start = thread_cpu_seconds();
    std::exception_ptr error;
    try {
      communicate(round);
      if (ps_ && !ps_->end_round()) record_communication(comm_.now(), comm_.now(), /*complete=*/false);
    } catch (const RoundAbandoned&) {
      error = std::make_exception_ptr(std::runtime_error(name_ + ": round abandoned at shutdown"));
    } catch (...) {
      error = std::current_exception();
    }
    if (error && ps_) ps_->abandon();  // the algorithm is failed (or torn down): its server stops too
    const double cpu_spent = thread_cpu_seconds() - cpu_start;
    lock.lock();
    stats_.comm_cpu_seconds += cpu_spent;
    job_error_ = error;
    has_job_ = false;
    comm_.notify_local(cv_);
    if (stop_) return;
  }
}

void GradientAlgorithm::check_not_failed() const {
  std::lock_guard lock(mutex_);
  if (failed_) std::rethrow_exception(failed_);
}

void GradientAlgorithm::set_gradients(std::span<float> gradients, std::vector<std::size_t> layer_sizes) {
  if (next_round_ != 0 || round_open_)
    throw std::logic_error(name_ + ": set_gradients() after the first round; call it once, before training");
  if (layer_sizes.empty()) throw std::invalid_argument(name_ + ": the gradient layout has no layers");
  std::vector<std::size_t> offsets{0};
  for (std::size_t l = 0; l < layer_sizes.size(); ++l) {
    if (layer_sizes[l] == 0)
      throw std::invalid_argument(name_ + ": gradient layer " + std::to_string(l) + " has no values");
    offsets.push_back(offsets.back() + layer_sizes[l]);
  }
  if (offsets.back() != gradients.size())
    throw std::invalid_argument(name_ + ": the gradient layers add up to " + std::to_string(offsets.back()) +
                                " values, the gradient buffer has " + std::to_string(gradients.size()));
  std::lock_guard lock(mutex_);
  gradients_ = gradients;
  offsets_ = std::move(offsets);
  ready_.assign(layer_sizes.size(), false);
  averaged_.assign(layer_sizes.size(), false);
  ready_at_.assign(layer_sizes.size(), 0.0);
}

void GradientAlgorithm::set_optimizer_state(std::span<float> state) {
  if (next_round_ != 0 || round_open_)
    throw std::logic_error(name_ + ": set_optimizer_state() after the first round; call it once, before training");
  optimizer_state_ = state;  // caller thread only: read by adopt()
}

void GradientAlgorithm::start_round_locked() {
  round_open_ = true;
  has_job_ = true;
  job_round_ = next_round_;
  busy_.clear();
}

void GradientAlgorithm::check_layer_call(const char* call, std::size_t layer) const {
  MURMUR_CHECK(!finished_);
  check_not_failed();
  if (offsets_.empty()) throw std::logic_error(name_ + ": " + call + "() before set_gradients()");
  if (layer >= layers())
    throw std::invalid_argument(name_ + ": " + call + "(" + std::to_string(layer) + "), but the gradient layout has " +
                                std::to_string(layers()) + " layers");
}

void GradientAlgorithm::gradient_ready(std::size_t layer) {
  check_layer_call("gradient_ready", layer);
  ready_at_[layer] = comm_.now();
  {
    std::lock_guard lock(mutex_);
    if (ready_[layer])
      throw std::logic_error(name_ + ": layer " + std::to_string(layer) + " handed over twice in round " +
                             std::to_string(next_round_));
    ready_[layer] = true;
    if (!round_open_) start_round_locked();
  }
  comm_.notify_local(cv_);
}

void GradientAlgorithm::hand_over_rest_locked(double now) {
  for (std::size_t l = 0; l < ready_.size(); ++l)
    if (!ready_[l]) {
      ready_[l] = true;
      ready_at_[l] = now;
    }
  if (!round_open_) start_round_locked();
}

void GradientAlgorithm::mark_averaged(std::size_t layer) {
  {
    std::lock_guard lock(mutex_);
    averaged_[layer] = true;
  }
  comm_.notify_local(cv_);
}

void GradientAlgorithm::wait_layer_averaged(std::size_t layer) {
  check_layer_call("wait_layer_averaged", layer);
  const double entered = comm_.now();
  bool round_failed = false;
  {
    std::unique_lock lock(mutex_);
    hand_over_rest_locked(entered);
    lock.unlock();
    comm_.notify_local(cv_);
    lock.lock();
    comm_.wait_local(lock, cv_, [&] { return averaged_[layer] || !has_job_; });
    round_failed = !has_job_ && job_error_ != nullptr;
  }
  caller_waits_.emplace_back(entered, comm_.now());
  // The round's error surfaces where average_gradients() would raise it,
  // before the caller updates a layer with a gradient that is not the mean.
  if (round_failed) average_gradients();
}

void GradientAlgorithm::average_gradients() {
  MURMUR_CHECK(!finished_);
  check_not_failed();
  if (offsets_.empty()) throw std::logic_error(name_ + ": average_gradients() before set_gradients()");
  const double entered = comm_.now();
  {
    std::lock_guard lock(mutex_);
    hand_over_rest_locked(entered);
  }
  comm_.notify_local(cv_);
  std::exception_ptr error;
  {
    std::unique_lock lock(mutex_);
    comm_.wait_local(lock, cv_, [&] { return !has_job_; });
    const double now = comm_.now();
    stats_.wait_seconds += now - entered;
    // Communication that ran before the caller asked for the result ran
    // while the caller computed (the rest of its backward pass, and with
    // the layer-wise step the next forward pass), except while it waited
    // for a layer.
    for (const auto& [begin, end] : busy_) {
      double computed = std::max(0.0, std::min(end, entered) - begin);
      for (const auto& [wait_begin, wait_end] : caller_waits_)
        computed -= std::max(0.0, std::min(end, wait_end) - std::max(begin, wait_begin));
      stats_.overlap_seconds += std::max(0.0, computed);
    }
    for (const auto& [wait_begin, wait_end] : caller_waits_) stats_.wait_seconds += wait_end - wait_begin;
    caller_waits_.clear();
    const double first = *std::min_element(ready_at_.begin(), ready_at_.end());
    last_ready_times_.resize(ready_at_.size());
    for (std::size_t l = 0; l < ready_at_.size(); ++l) last_ready_times_[l] = ready_at_[l] - first;
    std::fill(ready_.begin(), ready_.end(), false);
    std::fill(averaged_.begin(), averaged_.end(), false);
    round_open_ = false;
    error = job_error_;
    job_error_ = nullptr;
    if (error) failed_ = error;
    ++stats_.rounds;
    if (round_incomplete_) ++incomplete_rounds_;
    round_incomplete_ = false;
  }
  ++next_round_;
  asked_gate_ = false;
  if (error) rethrow_round_failure(name_, error);
}

void GradientAlgorithm::step(std::span<float> params) {
  MURMUR_CHECK(!finished_);
  check_not_failed();
  if (offsets_.empty())
    throw std::logic_error(name_ +
                           " averages gradients, not models: hand it the gradient buffer (set_gradients; "
                           "murmur::Peer::set_gradients) before the first step");
  if (round_open_) throw std::logic_error(name_ + ": step() between gradient_ready() and average_gradients()");
  {
    std::lock_guard lock(mutex_);
    ++stats_.steps;
  }
  if (gate_ && !asked_gate_) {
    asked_gate_ = true;
    if (auto change = gate_->before(next_round_)) {
      next_round_ = std::max(next_round_, change->first_round);  // a joiner enters at the view's first round
      adopt(*change, params);
    }
  }
}

void GradientAlgorithm::adopt(const ViewChange& change, std::span<float> params) {
  if (change.exchange_params) change.exchange_params(params, next_round_);
  members_ = change.view.members;  // no round in flight: the communication thread reads it in the next
  {
    std::lock_guard lock(mutex_);
    stats_.view_generation = change.view.generation;
  }
  // Re-agree the model (see the header): one exact mean of the parameters
  // and of the optimizer's state over the new ring, both on the wire at once.
  std::vector<std::span<float>> pieces{params};
  if (!optimizer_state_.empty()) pieces.push_back(optimizer_state_);
  if (!sum_over_members(pieces, Phase::kAllreduce, Phase::kAllgather, next_round_)) {
    gossip_log().warn(
        "{}: the parameters and the optimizer state could not be re-averaged over view {} (a member was lost "
        "meanwhile); the next view re-averages them",
        name_, change.view.generation);
  } else {
    const float inv = 1.0f / static_cast<float>(members_.size());
    for (std::span<float> piece : pieces)
      for (float& v : piece) v *= inv;
  }
  view_adopted(next_round_);
}

void GradientAlgorithm::flush(std::span<float>) { check_not_failed(); }

void GradientAlgorithm::finish(std::span<float>) {
  if (finished_) return;
  if (round_open_) average_gradients();  // layers were handed over: finish their round with the others
  finished_ = true;
}

void GradientAlgorithm::wait_ready(std::size_t layer) {
  std::unique_lock lock(mutex_);
  comm_.wait_local(lock, cv_, [&] { return stop_ || ready_[layer]; });
  if (!ready_[layer]) throw RoundAbandoned{};
}

std::vector<std::size_t> GradientAlgorithm::wait_more_ready(const std::vector<bool>& taken) {
  std::vector<std::size_t> more;
  std::unique_lock lock(mutex_);
  comm_.wait_local(lock, cv_, [&] {
    more.clear();
    for (std::size_t l = 0; l < ready_.size(); ++l)
      if (ready_[l] && !taken[l]) more.push_back(l);
    return stop_ || !more.empty();
  });
  if (more.empty()) throw RoundAbandoned{};
  return more;
}

std::vector<double> GradientAlgorithm::last_ready_times() const {
  std::lock_guard lock(mutex_);
  return last_ready_times_;
}

std::set<int> GradientAlgorithm::wait_excusing(const std::vector<fabric::RequestPtr>& requests) {
  auto excused = traffic_.wait_all_excusing(requests, options_.timeout_s, options_.tolerate_lost_peers);
  std::lock_guard lock(mutex_);
  for (int peer : excused)
    if (excused_logged_.insert(peer).second)
      gossip_log().warn("{}: rounds go on without rank {} ({}) until a view drops it: its link failed", name_, peer,
                        comm_.host(peer));
  return excused;
}

bool GradientAlgorithm::average(std::uint64_t round, std::span<const std::span<float>> pieces,
                                std::span<const std::uint32_t> tasks) {
  MURMUR_CHECK_EQ(pieces.size(), tasks.size());
  const double begin = comm_.now();
  if (ps_) {
    const bool complete = ps_->push_pull(round, members_, pieces, tasks);
    record_communication(begin, comm_.now(), complete);
    return complete;
  }
  std::vector<RingTensor> tensors;
  for (std::size_t k = 0; k < pieces.size(); ++k)
    tensors.push_back({pieces[k], task_tag(Phase::kGradientReduce, round, tasks[k]),
                       task_tag(Phase::kGradientGather, round, tasks[k])});
  const bool complete = ring_allreduce_sum(
      traffic_, members_, rank(), tensors, [this](const auto& r) { return wait_excusing(r); },
      options_.tolerate_lost_peers);
  if (complete) {
    const float inv = 1.0f / static_cast<float>(members_.size());
    for (const RingTensor& t : tensors)
      for (float& v : t.data) v *= inv;
  }
  record_communication(begin, comm_.now(), complete);
  return complete;
}

void GradientAlgorithm::record_communication(double begin, double end, bool complete) {
  std::lock_guard lock(mutex_);
  if (end > begin) {
    busy_.emplace_back(begin, end);
    stats_.comm_seconds += end - begin;
  }
  if (!complete) round_incomplete_ = true;
}

std::vector<std::size_t> GradientAlgorithm::tensor_sizes() const {
  std::vector<std::size_t> sizes;
  for (std::size_t l = 0; l < layers(); ++l) sizes.push_back(layer_floats(l));
  return sizes;
}

bool GradientAlgorithm::sum_over_members(std::span<const std::span<float>> pieces, Phase reduce, Phase gather,
                                         std::uint64_t id) {
  std::vector<RingTensor> tensors;
  for (std::size_t i = 0; i < pieces.size(); ++i)
    tensors.push_back({pieces[i], task_tag(reduce, id, i), task_tag(gather, id, i)});
  return ring_allreduce_sum(
      traffic_, members_, rank(), tensors, [this](const auto& r) { return wait_excusing(r); },
      options_.tolerate_lost_peers);
}

AlgorithmStats GradientAlgorithm::stats() const {
  AlgorithmStats s;
  {
    std::lock_guard lock(mutex_);
    s = stats_;
    s.incomplete_rounds = incomplete_rounds_;
  }
  s.links = traffic_.links();
  return s;
}

}  // namespace murmur::gossip::detail
