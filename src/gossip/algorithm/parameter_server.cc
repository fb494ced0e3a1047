#include "gossip/algorithm/parameter_server.h"

#include <stdexcept>

#include "common/check.h"

namespace murmur::gossip::detail {

ParameterServer::ParameterServer(std::string name, Traffic& traffic, RingWait wait, TagOf tag)
    : name_(std::move(name)), traffic_(traffic), comm_(traffic.comm()), wait_(std::move(wait)), tag_(std::move(tag)) {
  thread_ = comm_.start_thread([this] { loop(); });
}

ParameterServer::~ParameterServer() {
  stop();
  comm_.join_thread(thread_);
}

void ParameterServer::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  comm_.notify_local(cv_);
}

void ParameterServer::rethrow_locked() const {
  if (error_) std::rethrow_exception(error_);
  if (stop_) throw std::runtime_error(name_ + ": the server role stopped (the algorithm is shutting down)");
}

void ParameterServer::begin_round(std::uint64_t round, std::vector<int> members) {
  std::lock_guard lock(mutex_);
  MURMUR_CHECK(jobs_.empty() && !closing_);
  round_ = round;
  members_ = std::move(members);
  local_push_.clear();
  local_pull_.clear();
  round_done_ = false;
  incomplete_ = false;
}

void ParameterServer::expect(std::span<const PsShard> shards) {
  if (shards.empty()) return;
  std::vector<Job> posted;
  for (const PsShard& shard : shards) {
    Job job;
    job.shard = shard;
    for (int k : members_) {
      if (k == comm_.rank()) continue;
      job.from.push_back(k);
      job.pushes.emplace_back();
      // One float more than a shard: a longer push is reported as such
      // (below), not as the transport's truncation.
      job.pushes.back().fresh().resize(shard.floats + 1);
      job.receives.push_back(traffic_.recv(k, tag_(Phase::kPsPush, round_, shard.id), job.pushes.back()));
    }
    posted.push_back(std::move(job));
  }
  {
    std::lock_guard lock(mutex_);
    for (Job& job : posted) jobs_.push_back(std::move(job));
  }
  comm_.notify_local(cv_);
}

void ParameterServer::push_local(std::uint32_t id, std::span<const float> values) {
  {
    std::lock_guard lock(mutex_);
    local_push_[id].assign(values.begin(), values.end());
  }
  comm_.notify_local(cv_);
}

void ParameterServer::pull_local(std::uint32_t id, std::span<float> into) {
  std::unique_lock lock(mutex_);
  comm_.wait_local(lock, cv_, [&] { return stopped_locked() || local_pull_.count(id) > 0; });
  const auto it = local_pull_.find(id);
  if (it == local_pull_.end()) rethrow_locked();
  MURMUR_CHECK_EQ(it->second.size(), into.size());
  std::copy(it->second.begin(), it->second.end(), into.begin());
}

bool ParameterServer::end_round() {
  std::unique_lock lock(mutex_);
  closing_ = true;
  comm_.notify_local(cv_);
  comm_.wait_local(lock, cv_, [&] { return stopped_locked() || round_done_; });
  closing_ = false;
  if (!round_done_) rethrow_locked();
  return !incomplete_;
}

void ParameterServer::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    comm_.wait_local(lock, cv_, [&] { return stopped_locked() || !jobs_.empty() || (closing_ && !round_done_); });
    if (stopped_locked()) return;
    try {
      if (!jobs_.empty()) {
        Job job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        serve(job);
        lock.lock();
        continue;
      }
      // closing_, queue drained: the round's means must be delivered.
      lock.unlock();
      const bool lost = !wait_(sends_).empty();
      sends_.clear();
      lock.lock();
      incomplete_ = incomplete_ || lost;
      round_done_ = true;
    } catch (...) {
      if (!lock.owns_lock()) lock.lock();
      error_ = std::current_exception();
    }
    comm_.notify_local(cv_);
  }
}

void ParameterServer::serve(Job& job) {
  const std::size_t n = job.shard.floats;
  const bool lost = !wait_(job.receives).empty();
  std::vector<float> own;
  {
    std::unique_lock lock(mutex_);
    comm_.wait_local(lock, cv_, [&] { return stopped_locked() || local_push_.count(job.shard.id) > 0; });
    const auto it = local_push_.find(job.shard.id);
    if (it == local_push_.end()) rethrow_locked();
    own = std::move(it->second);
    local_push_.erase(it);
  }
  MURMUR_CHECK_EQ(own.size(), n);
  // Sum in member order (this rank's own push at its place), so that the
  // result does not depend on arrival order.
  MessageBuffer<float> mean;
  std::vector<float>& sum = mean.fresh();
  sum.assign(n, 0.0f);
  std::size_t contributions = 0, next_remote = 0;
  for (int k : members_) {
    const float* values = nullptr;
    if (k == comm_.rank()) {
      values = own.data();
    } else {
      const std::size_t j = next_remote++;
      const fabric::Request& r = *job.receives[j];
      if (r.error()) continue;  // a lost worker: left out (tolerated, or wait_ threw)
      if (r.bytes() != n * sizeof(float))
        throw std::invalid_argument(name_ + " server on rank " + std::to_string(comm_.rank()) + ": rank " +
                                    std::to_string(k) + " (" + comm_.host(k) + ") pushed " + std::to_string(r.bytes()) +
                                    " bytes for shard " + std::to_string(job.shard.id) + " of round " +
                                    std::to_string(round_) + ", expected " + std::to_string(n * sizeof(float)) +
                                    ": gradient layouts differ across ranks (the same model, --servers and "
                                    "--bytescheduler-partition and --ps-partition on every rank?)");
      values = job.pushes[j]->data();
    }
    for (std::size_t i = 0; i < n; ++i) sum[i] += values[i];
    ++contributions;
  }
  const float inv = 1.0f / static_cast<float>(contributions);
  for (float& v : sum) v *= inv;
  for (int k : job.from) sends_.push_back(traffic_.send(k, tag_(Phase::kPsPull, round_, job.shard.id), mean));
  {
    std::lock_guard lock(mutex_);
    local_pull_[job.shard.id] = sum;
    incomplete_ = incomplete_ || lost;
  }
  comm_.notify_local(cv_);
}

}  // namespace murmur::gossip::detail
