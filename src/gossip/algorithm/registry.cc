// The table behind registry.h. Why each algorithm has its traits:
//   dpsgd           mixes snapshots with its neighbours each round; nothing
//                   but the parameters outlives a round.
//   choco           keeps public copies x_hat of itself and a weighted sum of
//                   its neighbours' (s), which depend on the static graph's
//                   weights; compresses x - x_hat (any compressor, no error
//                   feedback: the public copies are its memory).
//   sgp             push-sum: parameters and a weight travel together; the
//                   weights' sum is what keeps the average right.
//   adpsgd          no rounds: a serving thread answers averaging requests at
//                   any time, with timed polls the virtual clock cannot see.
//   allreduce,      an exact ring all-reduce of the parameters (every step,
//   local-sgd       or every H steps): stateless between rounds.
//   topk-allreduce  compressed updates against a reference every rank holds,
//                   with error feedback on the sender.
//   bsp-a2a,        the survey's A2A family: exact means of the GRADIENTS
//   wfbp-a2a,       before the optimizer step (allreduce averages the
//   mg-wfbp,        parameters after it), fused, per layer, in measured
//   bytescheduler-  buckets, or in prioritised partitions; stateless between
//   a2a             steps, no period (every step), not simulable yet (the
//                   simulator has no layer-wise backward to hand them).
//   bsp-ps,         the survey's PS family: the same means through
//   wfbp-ps,        parameter servers co-located with the members (threads
//   bytescheduler-  of their own), which keep nothing between steps; the
//   ps              same traits as the A2A family.
//   signsgd,        compressed gradients all-gathered before the optimizer
//   topk-sgd        step; exact only in what they agree on (every rank
//                   applies the same combined gradient), so re-averaged at a
//                   view change like the rest. topk-sgd keeps an
//                   error-feedback residual, which checkpoints hold.
#include "gossip/algorithm/registry.h"

#include <stdexcept>

namespace murmur::gossip {

// The makers, each defined in its algorithm's file.
namespace detail {
std::unique_ptr<Algorithm> make_dpsgd(const AlgorithmOptions& o, Communicator& comm, const Topology& topology);
std::unique_ptr<Algorithm> make_choco(const AlgorithmOptions& o, Communicator& comm, const Topology& topology);
std::unique_ptr<Algorithm> make_sgp(const AlgorithmOptions& o, Communicator& comm, const Topology& topology);
std::unique_ptr<Algorithm> make_adpsgd(const AlgorithmOptions& o, Communicator& comm, const Topology& topology);
std::unique_ptr<Algorithm> make_allreduce(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_local_sgd(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_topk_allreduce(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_bsp_a2a(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_wfbp_a2a(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_mg_wfbp(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_bytescheduler_a2a(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_bsp_ps(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_wfbp_ps(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_bytescheduler_ps(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_signsgd(const AlgorithmOptions& o, Communicator& comm);
std::unique_ptr<Algorithm> make_topk_sgd(const AlgorithmOptions& o, Communicator& comm);
}  // namespace detail

namespace {

// Gossip on a graph.
void add_gossip_rows(std::vector<AlgorithmInfo>& t) {
  t.push_back({.name = "dpsgd",
               .summary = "decentralized parallel SGD (Lian et al. 2017): average with the graph's neighbours",
               .needs_topology = true,
               .has_rounds = true,
               .tunes_period = true,
               .simulable = true,
               .make = [](const AlgorithmOptions& o, Communicator& c, const Topology* g) {
                 return detail::make_dpsgd(o, c, *g);
               }});
  t.push_back({.name = "choco",
               .summary = "CHOCO-SGD (Koloskova et al. 2019): compressed gossip of public copies",
               .needs_topology = true,
               .static_topology = true,
               .has_rounds = true,
               .takes_compressor = true,
               .uses_gamma = true,
               .tunes_period = true,
               .tunes_ratio = true,
               .simulable = true,
               .on_membership_change = MembershipChange::kResyncNeighbourState,
               .checkpoint_state = kParameters | kPublicCopies,
               .make = [](const AlgorithmOptions& o, Communicator& c, const Topology* g) {
                 return detail::make_choco(o, c, *g);
               }});
  t.push_back({.name = "sgp",
               .summary = "stochastic gradient push (Assran et al. 2019): push-sum on directed graphs",
               .needs_topology = true,
               .has_rounds = true,
               .tunes_period = true,
               .simulable = true,
               .on_membership_change = MembershipChange::kConserveWeights,
               .checkpoint_state = kParameters | kPushSumWeight,
               .make = [](const AlgorithmOptions& o, Communicator& c, const Topology* g) {
                 return detail::make_sgp(o, c, *g);
               }});
  t.push_back({.name = "adpsgd",
               .summary = "asynchronous D-PSGD (Lian et al. 2018): pairwise averaging, no rounds",
               .needs_topology = true,
               .not_simulable_because = "it polls with timed waits and wakes from network callbacks the "
                                        "simulator's virtual clock cannot see",
               .on_membership_change = MembershipChange::kRepickPartners,
               .make = [](const AlgorithmOptions& o, Communicator& c, const Topology* g) {
                 return detail::make_adpsgd(o, c, *g);
               }});
}

// Centralized baselines: every rank gets the same result.
void add_centralized_rows(std::vector<AlgorithmInfo>& t) {
  t.push_back({.name = "allreduce",
               .summary = "exact mean of the PARAMETERS after every optimizer step (ring all-reduce)",
               .centralized = true,
               .has_rounds = true,
               .tunes_period = true,
               .simulable = true,
               .make = [](const AlgorithmOptions& o, Communicator& c, const Topology*) {
                 return detail::make_allreduce(o, c);
               }});
  t.push_back({.name = "topk-allreduce",
               .summary = "sparse S-SGD: compressed updates against a shared reference model, all-gathered",
               .centralized = true,
               .has_rounds = true,
               .takes_compressor = true,
               .tunes_period = true,
               .simulable = true,
               .on_membership_change = MembershipChange::kReagreeReference,
               .checkpoint_state = kParameters | kSharedReference | kErrorFeedback,
               .averages = Averages::kModelUpdates,
               .make = [](const AlgorithmOptions& o, Communicator& c, const Topology*) {
                 return detail::make_topk_allreduce(o, c);
               }});
  t.push_back({.name = "local-sgd",
               .summary = "exact mean of the parameters every H steps (ring all-reduce)",
               .centralized = true,
               .has_rounds = true,
               .tunes_period = true,
               .simulable = true,
               .make = [](const AlgorithmOptions& o, Communicator& c, const Topology*) {
                 return detail::make_local_sgd(o, c);
               }});
}

// The survey's A2A methods: every rank averages its gradients before the
// optimizer step, so every rank applies the same update.
void add_gradient_rows(std::vector<AlgorithmInfo>& t) {
  constexpr std::string_view kNotSimulable =
      "it averages gradients layer by layer during the backward pass, which the simulator does not run yet "
      "(murmur-sim's cost models cover the survey's methods)";
  auto row = [&](std::string_view name, std::string_view summary, AlgorithmMaker make) {
    t.push_back({.name = name,
                 .summary = summary,
                 .centralized = true,
                 .has_rounds = true,  // one per step: every rank's all-reduces pair up
                 .not_simulable_because = kNotSimulable,
                 .on_membership_change = MembershipChange::kReaverageModels,
                 .averages = Averages::kGradients,
                 .make = make});
  };
  row("bsp-a2a", "exact mean of the GRADIENTS before every optimizer step: one fused ring all-reduce after backward",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_bsp_a2a(o, c); });
  row("wfbp-a2a", "wait-free backpropagation: one gradient all-reduce per layer, started as backward hands it over",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_wfbp_a2a(o, c); });
  row("mg-wfbp", "merged-gradient WFBP: layers merged into buckets by the alpha-beta rule, alpha and beta measured",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_mg_wfbp(o, c); });
  row("bytescheduler-a2a", "ByteScheduler: gradient partitions all-reduced front layers first, within a credit window",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_bytescheduler_a2a(o, c); });
  row("bsp-ps", "parameter server: every layer pushed to its server (sharded by size) after backward, means pulled",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_bsp_ps(o, c); });
  row("wfbp-ps", "parameter server, wait-free: each layer pushed and pulled as backward hands it over",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_wfbp_ps(o, c); });
  row("bytescheduler-ps", "parameter server, ByteScheduler: partitions pushed front layers first, in a credit window",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_bytescheduler_ps(o, c); });
  row("signsgd", "signSGD with majority vote: 1-bit gradient signs all-gathered, the elementwise majority applied",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_signsgd(o, c); });
  row("topk-sgd", "TopK-SGD: sparse gradients (indices and values, --topk-density) all-gathered, error feedback",
      [](const AlgorithmOptions& o, Communicator& c, const Topology*) { return detail::make_topk_sgd(o, c); });
  t.back().checkpoint_state = kParameters | kErrorFeedback;
}

}  // namespace

const std::vector<AlgorithmInfo>& algorithms() {
  static const std::vector<AlgorithmInfo> table = [] {
    std::vector<AlgorithmInfo> t;
    add_gossip_rows(t);
    add_centralized_rows(t);
    add_gradient_rows(t);
    return t;
  }();
  return table;
}

const AlgorithmInfo* find_algorithm(std::string_view name) {
  for (const AlgorithmInfo& a : algorithms())
    if (a.name == name) return &a;
  return nullptr;
}

const AlgorithmInfo& algorithm_info(std::string_view name) {
  if (const AlgorithmInfo* a = find_algorithm(name)) return *a;
  throw std::invalid_argument("unknown gossip algorithm '" + std::string(name) +
                              "'; expected one of: " + algorithm_list());
}

std::string algorithm_list(const std::function<bool(const AlgorithmInfo&)>& keep, std::string_view last) {
  std::vector<std::string_view> kept;
  for (const AlgorithmInfo& a : algorithms())
    if (!keep || keep(a)) kept.push_back(a.name);
  std::string list;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (i > 0) list += i + 1 == kept.size() ? last : std::string_view(", ");
    list += kept[i];
  }
  return list;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& a : algorithms()) names.emplace_back(a.name);
  return names;
}

}  // namespace murmur::gossip
