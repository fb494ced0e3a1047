// bsp-a2a (the survey's BSP-A2A): the whole gradient in ONE fused ring
// all-reduce once the backward pass has handed over every layer, then the
// optimizer step; no overlap with computation by design (the baseline the
// layer-wise methods are measured against). The exact mean of the
// gradients, where `allreduce` is the exact mean of the parameters after
// the optimizer step.
#include "gossip/algorithm/gradient_algorithm.h"

namespace murmur::gossip::detail {
namespace {

class BspA2a final : public GradientAlgorithm {
 public:
  BspA2a(const AlgorithmOptions& o, Communicator& comm) : GradientAlgorithm("bsp-a2a", o, comm) {}
  ~BspA2a() override { shutdown(); }

 private:
  void communicate(std::uint64_t round) override {
    for (std::size_t l = 0; l < layers(); ++l) wait_ready(l);
    const std::span<float> all = range_span({0, layers()});
    const std::uint32_t task = 0;
    average(round, std::span<const std::span<float>>(&all, 1), std::span<const std::uint32_t>(&task, 1));
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_bsp_a2a(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<BspA2a>(o, comm);
}

}  // namespace murmur::gossip::detail
