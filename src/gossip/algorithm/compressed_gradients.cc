// The survey's compressed-gradient methods, both an all-gather of each
// rank's compressed gradient once backward has handed over every layer
// (sizes differ per rank for top-k, so each rank sends its message to every
// other; allreduce.cc's topk-allreduce does the same), decoded and combined
// in member order, so that every rank computes bitwise the same result:
//
//   signsgd   signSGD with majority vote (Bernstein et al., ICLR 2019):
//             each rank sends the signs of its gradient, 1 bit each (the
//             `sign` codec, packed; its scale is ignored), WITHOUT error
//             feedback; the gradient becomes the elementwise majority,
//             sign(sum of signs) in {-1, 0, +1} (0: a tie, possible with an
//             even number of ranks), which the optimizer applies with the
//             learning rate: every step moves each weight by lr, so it
//             wants a far smaller --lr than SGD (docs/seed-methods.md). A
//             zero gradient counts as +1 (the codec's one bit).
//   topk-sgd  TopK-SGD (the survey's; Shi et al. 2019): each rank sends the
//             `--topk-density` fraction of its accumulated gradient with
//             the largest magnitudes (indices and values, the `topk` codec)
//             and keeps the rest as error feedback for the next step
//             (residual += gradient; send top-k(residual); residual -= what
//             was sent); the gradient becomes the mean of the sparse
//             messages. Unlike topk-allreduce, which sparsifies what the
//             MODEL moved after the optimizer step (momentum included,
//             against a shared reference), this sparsifies the GRADIENT
//             before it, so the optimizer's momentum sees the sparse mean.
//
// A lost peer's message is left out (the mean is over the messages that
// arrived; the round is counted incomplete) until the view that drops it
// re-averages the models (gradient_algorithm.h). topk-sgd's error-feedback
// residual is its state (save_state: checkpoints hold it, so a resumed job
// sends what it held back, as an uninterrupted one would) and stays with its
// rank at a view change.
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "gossip/algorithm/gradient_algorithm.h"
#include "gossip/algorithm/message_allgather.h"
#include "gossip/algorithm/state_blob.h"
#include "gossip/compress/compressor.h"

namespace murmur::gossip::detail {
namespace {

enum class Combine { kMajorityVote, kMean };

class CompressedGradients final : public GradientAlgorithm {
 public:
  CompressedGradients(std::string name, const AlgorithmOptions& o, Communicator& comm, const std::string& spec,
                      Feedback feedback, Combine combine)
      : GradientAlgorithm(std::move(name), o, comm),
        encoder_(make_compressor(spec, feedback)),
        decoder_(make_compressor(spec, Feedback::kNone)),
        combine_(combine) {}
  ~CompressedGradients() override { shutdown(); }

  // The encoder's error-feedback residual (topk-sgd; signsgd keeps none),
  // empty before the first step. Caller thread, between steps: no round is
  // in flight then (average_gradients() returned), so the communication
  // thread does not touch the encoder.
  std::string save_state() const override {
    const auto* feedback = dynamic_cast<const ErrorFeedback*>(encoder_.get());
    if (feedback == nullptr) return Algorithm::save_state();
    const auto residual = feedback->residual();
    StateWriter w(name(), residual.size(), kStateVersion);
    w.floats(residual);
    return w.take();
  }
  // Before the first step. An empty state (a checkpoint written before the
  // residual was saved) starts it at zero, as it did then.
  void load_state(std::string_view state) override {
    auto* feedback = dynamic_cast<ErrorFeedback*>(encoder_.get());
    if (feedback == nullptr || state.empty()) return Algorithm::load_state(state);
    StateReader r(state, name(), kStateVersion);
    auto residual = r.floats("error-feedback residual");
    r.finish();
    if (residual.size() != r.elements())
      throw std::invalid_argument(name() + ": saved state has a residual of " + std::to_string(residual.size()) +
                                  " values for " + std::to_string(r.elements()) + " parameters");
    feedback->restore_residual(residual);
    saved_for_ = residual.size();
  }
  // The residual is this rank's own, whoever its neighbours are now.
  void load_state_from_other_view(std::string_view state) override { load_state(state); }

 private:
  static constexpr std::uint32_t kStateVersion = 1;

  void communicate(std::uint64_t round) override {
    for (std::size_t l = 0; l < layers(); ++l) wait_ready(l);
    const std::span<float> gradient = range_span({0, layers()});
    const std::size_t n = gradient.size();
    if (saved_for_ != 0 && saved_for_ != n) {
      // The encoder would quietly restart a residual of another size at zero.
      throw std::invalid_argument(name() + ": the saved state is for " + std::to_string(saved_for_) +
                                  " parameters, but the gradients have " + std::to_string(n));
    }
    saved_for_ = 0;
    const double begin = comm_.now();
    const int me = rank();
    const std::size_t cap = encoder_->max_encoded_bytes(n);
    inbox_.resize(comm_.size());
    inbox_[me].fresh().resize(cap);
    inbox_[me]->resize(encoder_->encode(gradient, *inbox_[me]));
    const bool complete = allgather_messages(traffic_, members_, me, task_tag(Phase::kGradientAllgather, round, 0), cap,
                                             inbox_, [this](const auto& r) { return wait_excusing(r); });
    sum_.assign(n, 0.0f);
    decoded_.resize(n);
    std::size_t contributions = 0;
    for (int k : members_) {  // member order: the same float sum everywhere
      if (inbox_[k]->empty()) continue;
      try {
        decoder_->decode(*inbox_[k], decoded_);
      } catch (const MalformedMessage& e) {
        throw std::invalid_argument(name() + ": rank " + std::to_string(k) + " (" + comm_.host(k) +
                                    ") sent a gradient this rank cannot decode (" + e.what() +
                                    "): the same model and --topk-density on every rank?");
      }
      if (combine_ == Combine::kMajorityVote) {
        for (std::size_t i = 0; i < n; ++i) sum_[i] += decoded_[i] > 0 ? 1.0f : (decoded_[i] < 0 ? -1.0f : 0.0f);
      } else {
        for (std::size_t i = 0; i < n; ++i) sum_[i] += decoded_[i];
      }
      ++contributions;
    }
    if (combine_ == Combine::kMajorityVote) {
      for (std::size_t i = 0; i < n; ++i) gradient[i] = sum_[i] > 0 ? 1.0f : (sum_[i] < 0 ? -1.0f : 0.0f);
    } else {
      const float inv = 1.0f / static_cast<float>(contributions);
      for (std::size_t i = 0; i < n; ++i) gradient[i] = sum_[i] * inv;
    }
    record_communication(begin, comm_.now(), complete);
  }

  std::unique_ptr<Compressor> encoder_, decoder_;  // communication thread only
  const Combine combine_;
  std::vector<MessageBuffer<std::byte>> inbox_;  // by rank
  std::vector<float> sum_, decoded_;
  // Set by load_state (caller thread, before the first step), checked and
  // cleared by the first communicate(): the rounds are ordered after it.
  std::size_t saved_for_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> make_signsgd(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<CompressedGradients>("signsgd", o, comm, "sign", Feedback::kNone, Combine::kMajorityVote);
}

std::unique_ptr<Algorithm> make_topk_sgd(const AlgorithmOptions& o, Communicator& comm) {
  if (!(o.topk_density > 0 && o.topk_density <= 1))
    throw std::invalid_argument("topk-sgd: --topk-density " + std::to_string(o.topk_density) + " is not in (0, 1]");
  char spec[64];
  std::snprintf(spec, sizeof spec, "topk:%.9g", o.topk_density);
  return std::make_unique<CompressedGradients>("topk-sgd", o, comm, spec, Feedback::kAuto, Combine::kMean);
}

}  // namespace murmur::gossip::detail
