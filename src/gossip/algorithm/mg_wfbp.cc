// mg-wfbp (merged-gradient WFBP, Shi et al. 2019; the survey's MG-WFBP):
// layers merged into buckets by the alpha-beta rule of gradient_buckets.h,
// each bucket one ring all-reduce in backward order, as wfbp-a2a runs
// layers. alpha and beta are measured, not configured:
//
//   round R (the first, and the first of every membership view): a probe on
//     the communication thread (ring all-reduces of 1 float and of
//     kProbeFloats floats over the job's own transport and ring, medians of
//     a few) while the round itself runs layer by layer, as wfbp-a2a; the
//     caller's hand-over times give each layer's readiness.
//   round R + 1: every rank contributes (alpha, beta, readiness by layer) to
//     one ring all-reduce; the mean is the same bits everywhere, so every
//     rank derives the same buckets from it, used from this round on.
//
// At a view change the ring is rebuilt over the new members (the driver)
// and both constants are measured again: a ring of another size has others.
#include <algorithm>
#include <vector>

#include "common/log.h"
#include "gossip/algorithm/gradient_algorithm.h"
#include "gossip/algorithm/gradient_buckets.h"

namespace murmur::gossip::detail {
namespace {

constexpr std::size_t kProbeFloats = 256 * 1024;  // 1 MiB: long enough that beta, not alpha, dominates
constexpr int kSmallProbes = 5, kLargeProbes = 3;

class MgWfbp final : public GradientAlgorithm {
 public:
  MgWfbp(const AlgorithmOptions& o, Communicator& comm) : GradientAlgorithm("mg-wfbp", o, comm) {}
  ~MgWfbp() override { shutdown(); }

 private:
  // Caller thread, between rounds (ordered before the next round's
  // communicate() by the driver's mutex).
  void view_adopted(std::uint64_t round) override {
    measure_round_ = round;
    buckets_.clear();
  }

  void communicate(std::uint64_t round) override {
    if (round <= measure_round_) {
      measured_ = probe(round);
      run_layer_by_layer(round);
      return;
    }
    if (buckets_.empty()) agree_buckets(round);
    for (std::uint32_t k = 0; k < buckets_.size(); ++k) {
      const LayerRange b = buckets_[k];
      for (std::size_t l = b.last; l-- > b.first;) wait_ready(l);
      const std::span<float> piece = range_span(b);
      average(round, std::span<const std::span<float>>(&piece, 1), std::span<const std::uint32_t>(&k, 1));
    }
  }

  void run_layer_by_layer(std::uint64_t round) {
    for (std::size_t l = layers(); l-- > 0;) {
      wait_ready(l);
      const std::span<float> piece = layer_span(l);
      const auto task = static_cast<std::uint32_t>(l);
      average(round, std::span<const std::span<float>>(&piece, 1), std::span<const std::uint32_t>(&task, 1));
    }
  }

  // The median time of `count` all-reduces of `floats` floats; -1 when a
  // lost peer aborted one (all are run anyway: the others' rings pair up
  // with this rank's).
  double time_allreduce(std::uint64_t round, std::size_t floats, int count, int first_id) {
    std::vector<float> data(floats, 1.0f);
    std::vector<double> seconds;
    bool complete = true;
    for (int i = 0; i < count; ++i) {
      const double begin = comm_.now();
      complete = sum_over_members(data, Phase::kLinkProbe, Phase::kLinkProbe, round * 16 + first_id + i) && complete;
      seconds.push_back(comm_.now() - begin);
    }
    std::sort(seconds.begin(), seconds.end());
    return complete ? seconds[seconds.size() / 2] : -1;
  }

  // This rank's measure of the all-reduce's alpha and beta; negative when
  // a lost peer spoiled it.
  AllreduceCost probe(std::uint64_t round) {
    const double small = time_allreduce(round, 1, kSmallProbes, 0);
    const double large = time_allreduce(round, kProbeFloats, kLargeProbes, kSmallProbes);
    if (small < 0 || large < 0) return {-1, -1};
    return {small, std::max(0.0, large - small) / (kProbeFloats * sizeof(float))};
  }

  // Every rank's measures, averaged (the same bits everywhere), and the
  // buckets they give.
  void agree_buckets(std::uint64_t round) {
    const std::vector<double> ready = last_ready_times();
    // A rank whose probe failed votes with a huge negative alpha, so that
    // every rank that completes the sum falls back alike.
    const bool mine = measured_.alpha_s >= 0 && ready.size() == layers();
    std::vector<float> shared{mine ? static_cast<float>(measured_.alpha_s) : -1e30f,
                              static_cast<float>(measured_.beta_s_per_byte)};
    for (std::size_t l = 0; l < layers(); ++l) shared.push_back(mine ? static_cast<float>(ready[l]) : 0.0f);
    std::vector<std::size_t> bytes;
    for (std::size_t l = 0; l < layers(); ++l) bytes.push_back(layer_floats(l) * sizeof(float));
    const bool complete = sum_over_members(shared, Phase::kLinkProbe, Phase::kLinkProbe, round * 16 + 15);
    const float inv = 1.0f / static_cast<float>(members_.size());
    for (float& v : shared) v *= inv;
    if (!complete || !(shared[0] >= 0)) {
      // One bucket per layer (wfbp-a2a) until the next view measures again.
      // A rank that saw the sum aborted while others completed it would
      // cut differently: a lost peer makes a view change, which measures
      // again, and until then size checks name the mismatch.
      for (std::size_t l = layers(); l-- > 0;) buckets_.push_back({l, l + 1});
      gossip_log().warn("mg-wfbp: alpha and beta could not be agreed (a member was lost); one bucket per layer");
      return;
    }
    const AllreduceCost cost{shared[0], shared[1]};
    std::vector<double> agreed_ready(shared.begin() + 2, shared.end());
    buckets_ = merge_gradient_buckets(agreed_ready, bytes, cost);
    gossip_log().info(
        "mg-wfbp: all-reduce alpha {:.1f} us, beta {:.3f} ns/byte over {} members: {} layers in {} "
        "buckets",
        cost.alpha_s * 1e6, cost.beta_s_per_byte * 1e9, members_.size(), layers(), buckets_.size());
  }

  std::uint64_t measure_round_ = 0;  // written between rounds (view_adopted)
  AllreduceCost measured_;           // communication thread only
  std::vector<LayerRange> buckets_;  // communication thread, and cleared between rounds
};

}  // namespace

std::unique_ptr<Algorithm> make_mg_wfbp(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<MgWfbp>(o, comm);
}

}  // namespace murmur::gossip::detail
