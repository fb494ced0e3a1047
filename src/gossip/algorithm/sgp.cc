// Stochastic Gradient Push (Assran et al. 2019): push-sum over a directed,
// possibly time-varying graph. Each node keeps a numerator x and a weight w
// (1 at the start); the caller sees the de-biased z = x / w. A round on
// snapshot (x, w): keep a share 1 / (1 + outdeg) of both, send one share to
// each out-neighbour of the round's graph, add what the in-neighbours push.
// The sum of w over the ranks stays n (exactly, for power-of-two shares), and
// z converges to the average of the x's.
//
// The caller's local update (params - z given at the last step) is applied to
// the numerator unscaled, as SGP applies gradient steps to x. Overlapped by
// default: the round of snapshot r is folded in at the next communicating
// step, keeping the local updates made meanwhile.
//
// Message: the weight share as a double, then the numerator share as floats.
//
// Membership views: a share whose send failed (the receiver was lost) stays
// with its sender, so the live ranks lose no mass they held; what a lost
// rank held when it died (its own x and w, and the shares it had received)
// is lost with it. The live ranks' ratios x / w still converge to one value,
// sum(x) / sum(w) over the live ranks, because every later round conserves
// both sums among them (docs/resilience.md, "sgp's mass"). A new view
// changes only the graph; the weights carry on.
#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/round_algorithm.h"

namespace murmur::gossip::detail {
namespace {

class Sgp final : public RoundAlgorithm {
 public:
  Sgp(const AlgorithmOptions& o, Communicator& comm, const Topology& topology)
      : RoundAlgorithm("sgp", o, comm, /*default_overlap=*/true), topology_(&topology) {}

  ~Sgp() override { shutdown(); }

 private:
  // Folds the caller's update into the numerator (first call: initialise).
  void absorb(std::span<const float> params) {
    if (x_.size() != params.size()) {
      x_.assign(params.begin(), params.end());
      given_.assign(params.begin(), params.end());
      w_ = 1.0;
      return;
    }
    for (std::size_t i = 0; i < params.size(); ++i) x_[i] += params[i] - given_[i];
  }

  void adopt_view(const ViewChange& change) override {
    view_topology_ = change.topology;
    topology_ = view_topology_.get();
  }

  // The numerator x, the weight w and what the caller was given (its
  // update since is added to x). Empty before the first round.
  void save_own(StateWriter& w) const override {
    w.floats(x_);
    w.floats(given_);
    w.f64(w_);
  }

  void load_own(StateReader& r, bool other_view) override {
    auto x = r.floats("sgp numerator x");
    auto given = r.floats("sgp given");
    const double w = r.f64("sgp weight w");
    r.finish();
    if (x.size() != given.size() || (!x.empty() && x.size() != r.elements()) || !(w > 0) || !std::isfinite(w))
      throw std::invalid_argument("sgp: saved state has " + std::to_string(x.size()) + " numerator and " +
                                  std::to_string(given.size()) + " given values for " + std::to_string(r.elements()) +
                                  " parameters, weight " + std::to_string(w));
    // Another view: the weights no longer sum to the members; push-sum
    // restarts at w = 1 from the parameters (absorb() at the first round).
    if (other_view) return;
    x_ = std::move(x);
    given_ = std::move(given);
    w_ = w;
    weight_.store(w);
  }

  void begin_round(std::span<const float> params) override {
    absorb(params);
    snapshot_ = x_;
    w_snapshot_ = w_;
    given_.assign(params.begin(), params.end());
  }

  void run_round(std::uint64_t round) override {
    Graph g = topology_->at_round(graph_round(round));
    const int me = rank();
    const auto& ins = g.in(me);
    const auto& outs = g.out(me);
    const std::size_t n = snapshot_.size();
    const std::size_t bytes = sizeof(double) + n * sizeof(float);
    const double share = 1.0 / (1.0 + static_cast<double>(outs.size()));
    out_.fresh().resize(bytes);
    const double w_share = w_snapshot_ * share;
    std::memcpy(out_->data(), &w_share, sizeof(double));
    float* xs = reinterpret_cast<float*>(out_->data() + sizeof(double));
    const float fshare = static_cast<float>(share);
    for (std::size_t i = 0; i < n; ++i) xs[i] = fshare * snapshot_[i];
    inbox_.resize(ins.size());
    std::vector<fabric::RequestPtr> requests;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      inbox_[k].fresh().resize(bytes);
      requests.push_back(traffic_.recv(ins[k].peer, tag(Phase::kSgp, round), inbox_[k]));
    }
    for (const auto& l : outs) requests.push_back(traffic_.send(l.peer, tag(Phase::kSgp, round), out_));
    wait_excusing(requests);
    result_.assign(xs, xs + n);
    double w = w_share;
    // A share that did not leave stays here (see the top of the file).
    for (std::size_t j = 0; j < outs.size(); ++j) {
      if (!requests[ins.size() + j]->error()) continue;
      w += w_share;
      for (std::size_t i = 0; i < n; ++i) result_[i] += xs[i];
    }
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (requests[k]->error()) continue;  // excused
      if (requests[k]->bytes() != bytes)
        throw std::invalid_argument("sgp: rank " + std::to_string(ins[k].peer) + " (" + comm_.host(ins[k].peer) +
                                    ") sent " + std::to_string(requests[k]->bytes()) + " bytes, expected " +
                                    std::to_string(bytes) + ": tensors differ in size across ranks");
      double wk;
      std::memcpy(&wk, inbox_[k]->data(), sizeof(double));
      w += wk;
      const float* in = reinterpret_cast<const float*>(inbox_[k]->data() + sizeof(double));
      for (std::size_t i = 0; i < n; ++i) result_[i] += in[i];
    }
    w_result_ = w;
  }

  void end_round(std::span<float> params) override {
    absorb(params);
    // x <- pushed(snapshot) + (local updates since the snapshot)
    for (std::size_t i = 0; i < x_.size(); ++i) x_[i] = result_[i] + (x_[i] - snapshot_[i]);
    w_ = w_result_;
    weight_.store(w_);
    const float inv = static_cast<float>(1.0 / w_);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = x_[i] * inv;
    given_.assign(params.begin(), params.end());
  }

  void add_stats(AlgorithmStats& s) const override { s.push_sum_weight = weight_.load(); }

  const Topology* topology_;                       // the job's, or view_topology_
  std::shared_ptr<const Topology> view_topology_;  // since the last view change
  std::vector<float> x_, given_, snapshot_, result_;
  double w_ = 1.0, w_snapshot_ = 1.0, w_result_ = 1.0;
  MessageBuffer<std::byte> out_;
  std::vector<MessageBuffer<std::byte>> inbox_;
  std::atomic<double> weight_{1.0};
};

}  // namespace

std::unique_ptr<Algorithm> make_sgp(const AlgorithmOptions& o, Communicator& comm, const Topology& topology) {
  return std::make_unique<Sgp>(o, comm, topology);
}

}  // namespace murmur::gossip::detail
