// The algorithm registry: one table of murmur's algorithms and their traits.
// Every decision that depends on which algorithm runs (does it need a graph,
// can it be scheduled or simulated, does it take a compressor) reads a trait
// here; no code outside registry.cc compares algorithm names.
//
//   const AlgorithmInfo& a = algorithm_info("choco");   // throws for an unknown name
//   if (a.needs_topology) topology = ...;
//   for (const AlgorithmInfo& a : algorithms()) ...     // registry order
//
// Some traits have no consumer yet; they are filled in so that peers that
// come and go (membership changes, state handed to a joining peer) and
// gradient-averaging methods find the answer in one place. Each trait's
// comment says what it means; registry.cc says why each algorithm has it.
//
// Adding an algorithm: docs/architecture.md, "Adding an algorithm".
// Thread safety: the table is immutable (built on first use).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gossip/algorithm/algorithm.h"

namespace murmur::gossip {

// What an algorithm must do when a peer joins or leaves between rounds.
enum class MembershipChange {
  // Nothing carries over between rounds but the parameters: the next round
  // runs on a graph (or ring) over the new members. dpsgd, allreduce,
  // local-sgd.
  kNextRoundOnNewMembers,
  // Each peer keeps state about its neighbours (choco's public copies and
  // their weighted sum): it must be rebuilt for the new neighbourhood, and
  // the new neighbours' public copies exchanged, before the next round.
  kResyncNeighbourState,
  // Push-sum (sgp): the weights must keep summing to the number of peers,
  // or the average drifts; a leaving peer's weight is lost unless handed
  // over, a joining one starts with weight 1 and rescales its model.
  kConserveWeights,
  // Pairwise and asynchronous (adpsgd): stop picking the departed, start
  // picking the newcomer; no global step to agree on.
  kRepickPartners,
  // Every peer holds the same reference model (topk-allreduce): it must be
  // re-agreed (a dense round over the new members) before sparse updates
  // against it mean the same thing everywhere again.
  kReagreeReference,
  // Gradient averaging keeps the models identical only while every rank
  // applies the same mean gradient; a round that lost a peer broke that.
  // The ring is rebuilt over the new members and their parameters are
  // averaged once (an exact all-reduce) before gradients are averaged
  // again (gradient_algorithm.h). bsp-a2a, wfbp-a2a, mg-wfbp (which also
  // measures alpha and beta again), bytescheduler-a2a (the new first
  // member leads).
  kReaverageModels,
};

// Parts of an algorithm's state that a checkpoint must hold and a joining
// peer must be given (bit flags). kParameters is in every algorithm's set.
enum StatePart : unsigned {
  kParameters = 1u << 0,       // the model itself
  kPublicCopies = 1u << 1,     // choco: x_hat and s = sum_j W(i,j) x_hat_j
  kPushSumWeight = 1u << 2,    // sgp: the weight w
  kSharedReference = 1u << 3,  // topk-allreduce: the reference every rank holds
  kErrorFeedback = 1u << 4,    // the compressor's residual (lost: the dropped mass)
};

// What the algorithm averages across peers.
enum class Averages {
  kModels,        // parameters (or their snapshot at a round)
  kModelUpdates,  // what the parameters moved since a shared reference
  kGradients,     // gradients before the optimizer step (the survey's A2A methods; algorithm.h, "Gradient averaging")
};

using AlgorithmMaker = std::unique_ptr<Algorithm> (*)(const AlgorithmOptions&, Communicator&, const Topology*);

struct AlgorithmInfo {
  std::string_view name = {};
  std::string_view summary = {};  // one line, for help texts and docs
  bool needs_topology = false;    // gossip on a graph; make_algorithm refuses a null topology
  bool static_topology = false;   // refuses a time-varying graph (choco)
  bool centralized = false;       // every rank gets the same exact (or agreed) result
  bool has_rounds = false;        // synchronous rounds every rank steps through together
  bool takes_compressor = false;  // GossipOptions::compressor is used
  bool uses_gamma = false;        // GossipOptions::gamma (a consensus step size) is used
  bool tunes_period = false;      // the scheduler may change its period
  bool tunes_ratio = false;       // the scheduler may change its ratio (with topk/randk and an adaptive schedule)
  bool simulable = false;         // murmur-sim can run it on the virtual clock
  std::string_view not_simulable_because = {};  // when !simulable: why, for the error message
  MembershipChange on_membership_change = MembershipChange::kNextRoundOnNewMembers;
  unsigned checkpoint_state = kParameters;  // StatePart bits
  Averages averages = Averages::kModels;
  AlgorithmMaker make = nullptr;
};

// Every algorithm, in a fixed order (the order help texts list them in).
const std::vector<AlgorithmInfo>& algorithms();
// nullptr for an unknown name.
const AlgorithmInfo* find_algorithm(std::string_view name);
// Throws std::invalid_argument naming `name` and listing the known ones.
const AlgorithmInfo& algorithm_info(std::string_view name);
// The names of the algorithms `keep` accepts (all by default), in registry
// order, joined with ", " (and `last` before the final one when given:
// "a, b or c").
std::string algorithm_list(const std::function<bool(const AlgorithmInfo&)>& keep = {}, std::string_view last = ", ");
// Every name, in registry order.
std::vector<std::string> algorithm_names();

}  // namespace murmur::gossip
