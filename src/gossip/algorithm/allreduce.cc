// Centralized baselines on the same driver:
//   allreduce       ring reduce-scatter + all-gather (Patarasuk & Yuan 2009):
//                   2 (p - 1) steps of n / p elements to the right neighbour;
//                   every rank ends with bitwise the same sum (or mean).
//   local-sgd       the same exact mean of the parameters, every H steps.
//   topk-allreduce  sparse S-SGD (e.g. Shi et al. 2019) on the model: every
//                   rank keeps the same reference model (the exact mean of
//                   the first round's snapshots), encodes its update since
//                   then, snapshot - reference, with the compressor (top-k
//                   with error feedback by default), the messages are
//                   all-gathered (sent to every other rank: sizes differ, k
//                   is small), and every rank decodes them, sums them in
//                   rank order and adds the mean to the reference, so all
//                   ranks agree bitwise. Compressing the update rather than
//                   the parameters is what makes this S-SGD: the top-k of a
//                   model's weights is not a model.
// Overlap is off by default: step() returns with the exact result in params.
// With options.overlap the result of snapshot r is folded in at the next
// communicating step: params <- result(snapshot) + (params - snapshot).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/message_allgather.h"
#include "gossip/algorithm/round_algorithm.h"
#include "gossip/compress/compressor.h"

namespace murmur::gossip::detail {
namespace {

class RingAllreduce final : public RoundAlgorithm {
 public:
  RingAllreduce(const std::string& name, const AlgorithmOptions& o, Communicator& comm)
      : RoundAlgorithm(name, o, comm, /*default_overlap=*/false) {
    for (int k = 0; k < comm.size(); ++k) members_.push_back(k);
  }

  ~RingAllreduce() override { shutdown(); }

 private:
  // The ring is rebuilt over the view's members, in member order.
  void adopt_view(const ViewChange& change) override { members_ = change.view.members; }

  void begin_round(std::span<const float> params) override { snapshot_.assign(params.begin(), params.end()); }

  // Nothing beyond the driver's part: every round starts from the
  // parameters alone.
  void load_own(StateReader& r, bool) override { r.finish(); }

  std::size_t offset(int chunk) const { return static_cast<std::size_t>(chunk) * result_->size() / members_.size(); }
  std::span<float> chunk(int c) { return result_.span().subspan(offset(c), offset(c + 1) - offset(c)); }

  // One step of the ring: `out` to the right, the left's chunk of `expect`
  // floats into `in`. With tolerate_lost_peers a lost neighbour aborts the
  // round instead of failing it; an aborted rank sends empty messages for
  // the rest of the round, so that every live rank finishes the round (an
  // empty message where a chunk was due aborts the receiver too) and none
  // waits for data that will not come. Returns whether `in` holds data.
  bool ring_step(int left, int right, fabric::Tag t, std::span<const float> out, const MessageBuffer<float>& buffer,
                 std::span<float> in) {
    std::vector<fabric::RequestPtr> requests{
        traffic_.recv(left, t, buffer, in),
        traffic_.send(right, t, result_, aborted_ ? std::span<const float>() : out)};
    wait_excusing(requests);
    if (requests[0]->error() || requests[1]->error()) {
      aborted_ = true;
      return false;
    }
    if (requests[0]->bytes() == 0 && !in.empty() && options_.tolerate_lost_peers) {
      aborted_ = true;  // the left aborted
      return false;
    }
    check_size(requests[0], in.size());
    return !aborted_;
  }

  void run_round(std::uint64_t round) override {
    result_.fresh() = snapshot_;
    aborted_ = false;
    const int p = static_cast<int>(members_.size());
    const int r = static_cast<int>(std::find(members_.begin(), members_.end(), rank()) - members_.begin());
    if (p > 1) {
      const int left = members_[(r + p - 1) % p];
      const int right = members_[(r + 1) % p];
      auto mod = [p](int x) { return ((x % p) + p) % p; };
      for (int s = 0; s < p - 1; ++s) {
        auto out = chunk(mod(r - s));
        auto in = chunk(mod(r - s - 1));
        tmp_.fresh().resize(in.size());
        if (!ring_step(left, right, tag(Phase::kAllreduce, round), out, tmp_, tmp_.span())) continue;
        const std::vector<float>& tmp = *tmp_;
        for (std::size_t i = 0; i < in.size(); ++i) in[i] += tmp[i];
      }
      for (int s = 0; s < p - 1; ++s) {
        auto out = chunk(mod(r + 1 - s));
        auto in = chunk(mod(r - s));
        ring_step(left, right, tag(Phase::kAllgather, round), out, result_, in);
      }
    }
    if (aborted_) {
      // No exact result this round: the model stays as it was (the next
      // complete round averages the ranks again).
      result_.fresh() = snapshot_;
      return;
    }
    if (options_.average) {
      const float inv = 1.0f / static_cast<float>(p);
      for (float& v : *result_) v *= inv;
    }
  }

  void check_size(const fabric::RequestPtr& r, std::size_t n) const {
    if (r->bytes() != n * sizeof(float))
      throw std::invalid_argument(name() + ": rank " + std::to_string(r->peer()) + " (" + comm_.host(r->peer()) +
                                  ") sent " + std::to_string(r->bytes()) + " bytes, expected " +
                                  std::to_string(n * sizeof(float)) + ": tensors differ in size across ranks");
  }

  void end_round(std::span<float> params) override {
    const std::vector<float>& result = *result_;
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = result[i] + (params[i] - snapshot_[i]);
  }

  std::vector<int> members_;  // the ring, in order: the view's members
  bool aborted_ = false;      // communication thread: this round lost a neighbour
  std::vector<float> snapshot_;
  MessageBuffer<float> result_, tmp_;
};

class TopkAllreduce final : public RoundAlgorithm {
 public:
  TopkAllreduce(const AlgorithmOptions& o, Communicator& comm)
      : RoundAlgorithm("topk-allreduce", o, comm, /*default_overlap=*/false),
        encoder_(make_compressor(o.compressor, Feedback::kAuto)) {
    for (int k = 0; k < comm.size(); ++k) {
      decoders_.push_back(make_compressor(o.compressor, Feedback::kNone));
      members_.push_back(k);
    }
  }

  ~TopkAllreduce() override { shutdown(); }

 private:
  // Every rank must hold the same reference; a round that lost a message
  // may have left them different, so every rank starts a new one (a dense
  // round) with the view, at the same round.
  void adopt_view(const ViewChange& change) override {
    members_ = change.view.members;
    reference_.clear();
    // Joined members have ranks past the job's first size.
    while (decoders_.size() < static_cast<std::size_t>(comm_.size()))
      decoders_.push_back(make_compressor(options_.compressor, Feedback::kNone));
  }

  void begin_round(std::span<const float> params) override {
    snapshot_.assign(params.begin(), params.end());
    taken_ = snapshot_;
  }

  // The reference every rank holds (empty before the first round) and the
  // encoder's error-feedback residual (empty without feedback or before the
  // first sparse round).
  void save_own(StateWriter& w) const override {
    w.floats(reference_);
    auto* ef = dynamic_cast<const ErrorFeedback*>(encoder_.get());
    w.floats(ef ? ef->residual() : std::span<const float>());
  }

  void load_own(StateReader& r, bool other_view) override {
    auto reference = r.floats("topk-allreduce reference");
    auto residual = r.floats("topk-allreduce error-feedback residual");
    r.finish();
    auto* ef = dynamic_cast<ErrorFeedback*>(encoder_.get());
    for (const auto* v : {&reference, &residual})
      if (!v->empty() && v->size() != r.elements())
        throw std::invalid_argument("topk-allreduce: saved state has a vector of " + std::to_string(v->size()) +
                                    " values for " + std::to_string(r.elements()) + " parameters");
    if (!residual.empty() && !ef)
      throw std::invalid_argument("topk-allreduce: saved state has an error-feedback residual, but compressor " +
                                  encoder_->name() + " runs without feedback");
    if (ef) ef->restore_residual(residual);
    // Another view: the reference may differ between the ranks that held
    // it; the first round re-agrees it (as adopt_view does).
    if (!other_view) reference_ = std::move(reference);
  }

  void run_round(std::uint64_t round) override {
    if (reference_.empty()) {
      start_reference(round);
      return;
    }
    const int p = static_cast<int>(members_.size());
    const int me = rank();
    const std::size_t n = snapshot_.size();
    for (std::size_t i = 0; i < n; ++i) snapshot_[i] -= reference_[i];  // the update to send
    const std::size_t cap = encoder_->max_encoded_bytes(n);
    inbox_.resize(comm_.size());
    inbox_[me].fresh().resize(cap);
    inbox_[me]->resize(encoder_->encode(snapshot_, *inbox_[me]));
    // A lost rank's update is left out (until the view's dense round).
    allgather_messages(traffic_, members_, me, tag(Phase::kTopkAllgather, round), cap, inbox_,
                       [this](const auto& r) { return wait_excusing(r); });
    update_.assign(n, 0.0f);
    decoded_.resize(n);
    for (int k : members_) {  // rank order: the same float sum everywhere
      if (inbox_[k]->empty()) continue;
      decoders_[k]->decode(*inbox_[k], decoded_);
      for (std::size_t i = 0; i < n; ++i) update_[i] += decoded_[i];
    }
    const float scale = options_.average ? 1.0f / static_cast<float>(p) : 1.0f;
    for (std::size_t i = 0; i < n; ++i) reference_[i] += update_[i] * scale;
    if (auto* ef = dynamic_cast<ErrorFeedback*>(encoder_.get())) {
      double sum = 0;
      for (float e : ef->residual()) sum += double(e) * e;
      residual_norm_.store(std::sqrt(sum));
    }
  }

  // The first round: every rank sends its whole snapshot to every other and
  // the reference becomes their exact mean (or sum), summed in rank order.
  void start_reference(std::uint64_t round) {
    const int me = rank();
    const std::size_t n = snapshot_.size();
    std::vector<MessageBuffer<float>> all(comm_.size());
    *all[me] = snapshot_;
    std::vector<fabric::RequestPtr> requests;
    for (int k : members_) {
      if (k == me) continue;
      all[k]->resize(n);
      requests.push_back(traffic_.recv(k, tag(Phase::kAllgather, round), all[k]));
    }
    for (int k : members_)
      if (k != me) requests.push_back(traffic_.send(k, tag(Phase::kAllgather, round), all[me]));
    wait_excusing(requests);
    // Receives are posted in member order, skipping this rank; a lost
    // rank's snapshot is left out of the mean.
    int contributions = 1;
    for (std::size_t i = 0, j = 0; i < members_.size(); ++i) {
      const int k = members_[i];
      if (k == me) continue;
      const auto& request = requests[j++];
      if (request->error()) {
        all[k]->clear();
        continue;
      }
      ++contributions;
      const std::size_t got = request->bytes();
      if (got != n * sizeof(float)) {
        throw std::runtime_error("topk-allreduce: rank " + std::to_string(k) + " (" + comm_.host(k) + ") sent " +
                                 std::to_string(got) + " bytes of parameters, expected " +
                                 std::to_string(n * sizeof(float)));
      }
    }
    reference_.assign(n, 0.0f);
    for (int k : members_) {
      const std::vector<float>& from = *all[k];
      if (from.empty()) continue;
      for (std::size_t i = 0; i < n; ++i) reference_[i] += from[i];
    }
    if (options_.average) {
      const float inv = 1.0f / static_cast<float>(contributions);
      for (float& v : reference_) v *= inv;
    }
  }

  void end_round(std::span<float> params) override {
    // snapshot_ holds the update sent (or, after the first round, the
    // snapshot itself); what the caller did since is params - that snapshot.
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = reference_[i] + (params[i] - taken_[i]);
  }

  void add_stats(AlgorithmStats& s) const override { s.residual_norm = residual_norm_.load(); }

  std::vector<int> members_;  // the view's members
  std::unique_ptr<Compressor> encoder_;
  std::vector<std::unique_ptr<Compressor>> decoders_;  // by source rank
  std::vector<float> snapshot_, taken_, reference_, update_, decoded_;
  std::vector<MessageBuffer<std::byte>> inbox_;  // by source rank
  std::atomic<double> residual_norm_{0};
};

}  // namespace

std::unique_ptr<Algorithm> make_allreduce(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<RingAllreduce>("allreduce", o, comm);
}
std::unique_ptr<Algorithm> make_local_sgd(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<RingAllreduce>("local-sgd", o, comm);
}
std::unique_ptr<Algorithm> make_topk_allreduce(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<TopkAllreduce>(o, comm);
}

}  // namespace murmur::gossip::detail
