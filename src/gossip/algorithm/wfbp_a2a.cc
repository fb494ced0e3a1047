// wfbp-a2a (wait-free backpropagation, Zhang et al. 2017, the survey's
// WFBP-A2A): one ring all-reduce per layer, in backward order (last layer
// first), each started as soon as its layer is handed over, on the
// communication thread, so that it runs while the caller computes the
// layers below. Every rank walks the layers in the same fixed order, so the
// rings pair up without any negotiation.
#include "gossip/algorithm/gradient_algorithm.h"

namespace murmur::gossip::detail {
namespace {

class WfbpA2a final : public GradientAlgorithm {
 public:
  WfbpA2a(const AlgorithmOptions& o, Communicator& comm) : GradientAlgorithm("wfbp-a2a", o, comm) {}
  ~WfbpA2a() override { shutdown(); }

 private:
  void communicate(std::uint64_t round) override {
    for (std::size_t l = layers(); l-- > 0;) {
      wait_ready(l);
      const std::span<float> piece = layer_span(l);
      const auto task = static_cast<std::uint32_t>(l);
      average(round, std::span<const std::span<float>>(&piece, 1), std::span<const std::uint32_t>(&task, 1));
    }
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_wfbp_a2a(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<WfbpA2a>(o, comm);
}

}  // namespace murmur::gossip::detail
