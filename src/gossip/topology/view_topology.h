// The gossip graph of a membership view: when peers are lost (issue 18) every
// live peer rebuilds the job's topology for the members that remain, from the
// job's own spec, without talking to anyone. It must therefore come out the
// same, bit for bit, on every rank: it depends only on its arguments.
//
//   - A generator (factory.h: ring, exponential, random, one-peer-exponential,
//     ...) is regenerated on live.size() nodes with the job's parameters and
//     seed. Where the generator cannot make that graph, the nearest one it can
//     is made instead, and the description says so: a random d-regular graph
//     lowers d to the largest degree that exists on n nodes; a hypercube whose
//     size is no longer a power of two, or an erdos-renyi graph that stays
//     disconnected, falls back to the rule for files below (the job's graph
//     cut down to the live nodes, reconnected).
//   - A graph file keeps the subgraph on the live nodes (graph_repair.h) with
//     weights recomputed: Metropolis-Hastings when undirected, push-sum when
//     directed. The file's own weights cannot survive a lost node (rows would
//     no longer sum to 1), so they are dropped; they are kept only when no
//     node is lost. A graph that fell apart is reconnected with edges between
//     its components' lowest nodes (see reconnect for how few).
//   - A view of one node has no edges: the algorithm has no one to talk to.
//
// Node k of the result is the job's node live[k] (the view keeps the stable
// order of the job's ranks).
//
// Thread-safety: a pure function. Cost: the generator's, plus the spectral gap,
// O(n^3) (dense; see kSpectralGapMaxNodes).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gossip/topology/topology.h"
#include "murmur/gossip_options.h"

namespace murmur::gossip {

// Above this many live nodes the spectral gap is not computed (NaN): it is a
// dense O(n^3) eigenvalue problem that every rank would solve at every
// membership change, for a number that only goes into the log. Measured on
// the 2-core development host (whole call, under load): about 45 ms at 128
// nodes, 500 ms at 256.
inline constexpr int kSpectralGapMaxNodes = 128;

struct ViewTopology {
  // Nodes 0..live.size()-1; node k is the job's node live[k]. Owned.
  std::unique_ptr<Topology> topology;
  // Edges added to reconnect the graph, (from, to) in the view's numbering
  // (undirected edges once, lower end first). Empty for generators.
  std::vector<std::pair<int, int>> added_edges;
  // 1 - |lambda_2| of the view's mixing matrix (of round 0 for a time-varying
  // topology); 1 for a single node; NaN above kSpectralGapMaxNodes.
  double spectral_gap = 0;
  // One line for the log: which view, what was rebuilt and how.
  std::string description;
};

// `options`: the job's gossip settings (topology spec, degree, probability,
// topology seed). `full`: the job's topology over all of its original nodes
// (make_gossip_topology). `live`: the original node ids still members,
// ascending, non-empty. Throws std::invalid_argument naming the bad entry of
// `live` (it comes from the membership service), TopologyError when the
// job's spec cannot make even the fallback graph.
ViewTopology topology_for_view(const GossipOptions& options, const Topology& full, const std::vector<int>& live);

}  // namespace murmur::gossip
