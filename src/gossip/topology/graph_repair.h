// Cutting a graph down to some of its nodes and mending what fell apart:
// the pieces of topology_for_view (view_topology.h) that work on one Graph.
//
// Everything here is deterministic: the result depends only on the inputs
// (no hashing order, no randomness), so every rank that repairs the same
// graph gets the same edges in the same order.
//
// Thread-safety: pure functions of their arguments. Cost: O(nodes + edges).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

// The subgraph of `g` on `nodes` (ascending, distinct ids of g): node k of the
// result is g's node nodes[k]. Edges between kept nodes keep their direction
// and link class but not their weights, and self weights are dropped: weights
// chosen for the whole graph no longer sum to 1 once a neighbour is gone.
Graph induced_subgraph(const Graph& g, const std::vector<int>& nodes);

// Connected components (strongly connected ones for a directed graph), each
// sorted ascending, ordered by their lowest node.
std::vector<std::vector<int>> components(const Graph& g);

struct Reconnection {
  std::size_t components = 0;              // before anything was added
  std::vector<std::pair<int, int>> added;  // (from, to), in the order added
  std::size_t fewest_possible = 0;         // the minimum number of edges that would do
};

// Adds the edges that make `g` (strongly) connected, between each
// component's lowest node, and returns them:
//   - undirected: component k -- component k+1, exactly components - 1
//     edges, which is the minimum;
//   - directed: a cycle component 0 -> 1 -> ... -> c-1 -> 0, skipping an
//     edge that already exists; at most c edges. The minimum is
//     max(sources, sinks) of the graph of components (Eswaran and Tarjan
//     1976), which the cycle meets when no component reaches another (the
//     usual case after a loss: islands), and exceeds otherwise;
//     fewest_possible says by how much.
// Added edges carry no weight.
Reconnection reconnect(Graph& g);

}  // namespace murmur::gossip
