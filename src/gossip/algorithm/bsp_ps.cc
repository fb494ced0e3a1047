// bsp-ps (the survey's BSP-PS): once the backward pass has handed over
// every layer, every layer is pushed to its parameter server at once (one
// push/pull set; layers are sharded over the servers by size, ps_sharding.h)
// and the means pulled back, then the optimizer step. The servers are
// co-located threads, one per serving member (--servers; ps_exchange.h).
// No overlap with computation by design, as bsp-a2a.
#include "gossip/algorithm/gradient_algorithm.h"

namespace murmur::gossip::detail {
namespace {

class BspPs final : public GradientAlgorithm {
 public:
  BspPs(const AlgorithmOptions& o, Communicator& comm)
      : GradientAlgorithm("bsp-ps", o, comm, Exchange::kParameterServer) {}
  ~BspPs() override { shutdown(); }

 private:
  void communicate(std::uint64_t round) override {
    std::vector<std::span<float>> pieces;
    std::vector<std::uint32_t> tasks;
    for (std::size_t l = 0; l < layers(); ++l) {
      wait_ready(l);
      pieces.push_back(layer_span(l));
      tasks.push_back(static_cast<std::uint32_t>(l));
    }
    average(round, pieces, tasks);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_bsp_ps(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<BspPs>(o, comm);
}

}  // namespace murmur::gossip::detail
