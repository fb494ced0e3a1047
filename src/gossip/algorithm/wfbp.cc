// wfbp-a2a and wfbp-ps (wait-free backpropagation, Zhang et al. 2017, the
// survey's WFBP-A2A and WFBP-PS): each layer averaged on its own, in
// backward order (last layer first), as soon as it is handed over, on the
// communication thread, so that it runs while the caller computes the
// layers below: a ring all-reduce per layer (wfbp-a2a), or a push of the
// layer to its parameter server and a pull of the mean (wfbp-ps,
// ps_exchange.h). Every rank walks the layers in the same fixed order, so
// the rings pair up, and the servers serve in the order workers push,
// without any negotiation.
#include "gossip/algorithm/gradient_algorithm.h"

namespace murmur::gossip::detail {
namespace {

class Wfbp final : public GradientAlgorithm {
 public:
  Wfbp(std::string name, const AlgorithmOptions& o, Communicator& comm, Exchange exchange)
      : GradientAlgorithm(std::move(name), o, comm, exchange) {}
  ~Wfbp() override { shutdown(); }

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
  return std::make_unique<Wfbp>("wfbp-a2a", o, comm, Exchange::kRing);
}

std::unique_ptr<Algorithm> make_wfbp_ps(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<Wfbp>("wfbp-ps", o, comm, Exchange::kParameterServer);
}

}  // namespace murmur::gossip::detail
