// Structural measures of one graph: degrees, connectivity, diameter.
// All are O(nodes * edges) at most and allocate only their result.
#pragma once

#include <optional>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

// Out- and in-degree ranges; equal for an undirected graph.
struct DegreeRange {
  int min_out = 0;
  int max_out = 0;
  int min_in = 0;
  int max_in = 0;
};
DegreeRange degrees(const Graph& g);

// A node that cannot reach, or cannot be reached from, node 0 (strong
// connectivity for a directed graph); nullopt when the graph is connected.
std::optional<int> unreachable_node(const Graph& g);
inline bool connected(const Graph& g) { return !unreachable_node(g).has_value(); }

// Longest shortest path (in hops, along edge directions), by BFS from every
// node; nullopt when the graph is not (strongly) connected.
std::optional<int> diameter(const Graph& g);

}  // namespace murmur::gossip
