// D-PSGD (Lian et al. 2017): x_i <- sum_j W(i, j) x_j with the topology's
// mixing weights (Metropolis-Hastings for undirected graphs, push-sum shares
// for directed ones, or the weights of a graph file), over the graph of the
// round, so time-varying topologies work too. Overlapped by default: the
// mix of snapshot r is folded in at the next communicating step.
#include <vector>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/round_algorithm.h"
#include "gossip/topology/mixing.h"

namespace murmur::gossip::detail {
namespace {

class Dpsgd final : public RoundAlgorithm {
 public:
  Dpsgd(const AlgorithmOptions& o, Communicator& comm, const Topology& topology)
      : RoundAlgorithm("dpsgd", o, comm, /*default_overlap=*/true), topology_(&topology) {}

  ~Dpsgd() override { shutdown(); }

 private:
  // Lost neighbours need no state dropped (dpsgd keeps none per neighbour)
  // and new ones none initialised: the next round mixes on the new graph.
  void adopt_view(const ViewChange& change) override {
    view_topology_ = change.topology;
    topology_ = view_topology_.get();
    cached_ = false;
  }

  // Nothing beyond the driver's part (steps, period, the graph's phase):
  // dpsgd keeps no state between rounds but the parameters.
  void load_own(StateReader& r, bool) override { r.finish(); }

  void begin_round(std::span<const float> params) override { snapshot_.fresh().assign(params.begin(), params.end()); }

  void run_round(std::uint64_t round) override {
    // A static topology's neighbourhood is computed once; a time-varying
    // one's every round.
    if (!cached_ || topology_->time_varying()) {
      hood_ = neighbourhood(topology_->at_round(graph_round(round)), rank());
      cached_ = true;
    }
    const auto& ins = hood_.in;
    const auto& outs = hood_.out;
    const std::size_t n = snapshot_->size();
    inbox_.resize(ins.size());
    std::vector<fabric::RequestPtr> requests;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      inbox_[k].fresh().resize(n);
      requests.push_back(traffic_.recv(ins[k].peer, tag(Phase::kDpsgd, round), inbox_[k]));
    }
    for (const auto& l : outs) requests.push_back(traffic_.send(l.peer, tag(Phase::kDpsgd, round), snapshot_));
    wait_excusing(requests);
    for (std::size_t k = 0; k < ins.size(); ++k)
      if (!requests[k]->error()) check_size(requests[k], n);
    // Accumulated in double: the weights are not exact in float, and the
    // mean's drift under float rounding would be a random walk over rounds.
    // At consensus (all x equal) the result rounds back to x exactly.
    // An excused neighbour's weight stays with this rank's own value: the
    // row still sums to one, and the matrix over the live ranks stays
    // doubly stochastic for a symmetric graph.
    double self = hood_.row.self;
    for (std::size_t k = 0; k < ins.size(); ++k)
      if (requests[k]->error()) self += hood_.row.in[k];
    acc_.assign(n, 0.0);
    const std::vector<float>& snapshot = *snapshot_;
    for (std::size_t i = 0; i < n; ++i) acc_[i] = self * snapshot[i];
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (requests[k]->error()) continue;  // excused
      const double wk = hood_.row.in[k];
      const float* in = inbox_[k]->data();
      for (std::size_t i = 0; i < n; ++i) acc_[i] += wk * in[i];
    }
    result_.resize(n);
    for (std::size_t i = 0; i < n; ++i) result_[i] = static_cast<float>(acc_[i]);
  }

  void end_round(std::span<float> params) override {
    // params <- W x(snapshot) + (params - snapshot); exactly the mix when the
    // caller did not move.
    const std::vector<float>& snapshot = *snapshot_;
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = result_[i] + (params[i] - snapshot[i]);
  }

  void check_size(const fabric::RequestPtr& r, std::size_t n) const {
    if (r->bytes() != n * sizeof(float))
      throw std::invalid_argument("dpsgd: rank " + std::to_string(r->peer()) + " (" + comm_.host(r->peer()) +
                                  ") sent " + std::to_string(r->bytes()) + " bytes, expected " +
                                  std::to_string(n * sizeof(float)) + ": tensors differ in size across ranks");
  }

  const Topology* topology_;                       // the job's, or view_topology_
  std::shared_ptr<const Topology> view_topology_;  // since the last view change
  bool cached_ = false;
  Neighbourhood hood_;
  MessageBuffer<float> snapshot_;
  std::vector<MessageBuffer<float>> inbox_;
  std::vector<float> result_;
  std::vector<double> acc_;
};

}  // namespace

std::unique_ptr<Algorithm> make_dpsgd(const AlgorithmOptions& o, Communicator& comm, const Topology& topology) {
  return std::make_unique<Dpsgd>(o, comm, topology);
}

}  // namespace murmur::gossip::detail
