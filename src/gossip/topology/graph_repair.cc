#include "gossip/topology/graph_repair.h"

#include <algorithm>

#include "common/check.h"

namespace murmur::gossip {

Graph induced_subgraph(const Graph& g, const std::vector<int>& nodes) {
  // position[original] = view id, or -1 when the node is not kept.
  std::vector<int> position(static_cast<std::size_t>(g.size()), -1);
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    MURMUR_CHECK_GE(nodes[k], 0);
    MURMUR_CHECK_LT(nodes[k], g.size());
    MURMUR_CHECK_EQ(position[nodes[k]], -1);
    position[nodes[k]] = static_cast<int>(k);
  }
  Graph sub(static_cast<int>(nodes.size()), g.directed());
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    for (const Link& link : g.out(nodes[k])) {
      const int to = position[link.peer];
      if (to < 0) continue;
      // An undirected edge is listed at both ends; add it once.
      if (!g.directed() && to < static_cast<int>(k)) continue;
      sub.add_edge(static_cast<int>(k), to, kNoWeight, link.label);
    }
  }
  return sub;
}

namespace {

// Nodes in the order a depth-first search along out-edges finishes them
// (iterative: a 1,000-node path would be 1,000 frames deep).
std::vector<int> finish_order(const Graph& g) {
  const int n = g.size();
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  std::vector<std::pair<int, std::size_t>> stack;  // (node, next out-link)
  for (int start = 0; start < n; ++start) {
    if (seen[start]) continue;
    seen[start] = 1;
    stack.emplace_back(start, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const auto& out = g.out(node);
      if (next < out.size()) {
        const int peer = out[next++].peer;
        if (!seen[peer]) {
          seen[peer] = 1;
          stack.emplace_back(peer, 0);
        }
      } else {
        order.push_back(node);
        stack.pop_back();
      }
    }
  }
  return order;
}

}  // namespace

std::vector<std::vector<int>> components(const Graph& g) {
  // Kosaraju: in reverse finish order, what a node reaches along in-edges and
  // has not been claimed yet is its strongly connected component. For an
  // undirected graph in == out and these are the connected components.
  const std::vector<int> order = finish_order(g);
  std::vector<int> component_of(static_cast<std::size_t>(g.size()), -1);
  std::vector<std::vector<int>> result;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (component_of[*it] >= 0) continue;
    const int id = static_cast<int>(result.size());
    std::vector<int> members{*it};
    component_of[*it] = id;
    for (std::size_t k = 0; k < members.size(); ++k) {
      for (const Link& link : g.in(members[k])) {
        if (component_of[link.peer] >= 0) continue;
        component_of[link.peer] = id;
        members.push_back(link.peer);
      }
    }
    std::sort(members.begin(), members.end());
    result.push_back(std::move(members));
  }
  std::sort(result.begin(), result.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return result;
}

namespace {

// max(sources, sinks) of the graph of components; 0 when there is one.
std::size_t fewest_directed_edges(const Graph& g, const std::vector<std::vector<int>>& parts) {
  if (parts.size() <= 1) return 0;
  std::vector<int> part_of(static_cast<std::size_t>(g.size()));
  for (std::size_t p = 0; p < parts.size(); ++p) {
    for (int node : parts[p]) part_of[node] = static_cast<int>(p);
  }
  std::vector<char> has_in(parts.size(), 0);
  std::vector<char> has_out(parts.size(), 0);
  for (int node = 0; node < g.size(); ++node) {
    for (const Link& link : g.out(node)) {
      if (part_of[node] == part_of[link.peer]) continue;
      has_out[part_of[node]] = 1;
      has_in[part_of[link.peer]] = 1;
    }
  }
  const auto sources = static_cast<std::size_t>(std::count(has_in.begin(), has_in.end(), 0));
  const auto sinks = static_cast<std::size_t>(std::count(has_out.begin(), has_out.end(), 0));
  return std::max(sources, sinks);
}

}  // namespace

Reconnection reconnect(Graph& g) {
  const std::vector<std::vector<int>> parts = components(g);
  Reconnection result;
  result.components = parts.size();
  if (parts.size() <= 1) return result;
  if (!g.directed()) {
    result.fewest_possible = parts.size() - 1;
    for (std::size_t p = 0; p + 1 < parts.size(); ++p) {
      g.add_edge(parts[p].front(), parts[p + 1].front());
      result.added.emplace_back(parts[p].front(), parts[p + 1].front());
    }
    return result;
  }
  result.fewest_possible = fewest_directed_edges(g, parts);
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const int from = parts[p].front();
    const int to = parts[(p + 1) % parts.size()].front();
    if (g.has_edge(from, to)) continue;
    g.add_edge(from, to);
    result.added.emplace_back(from, to);
  }
  return result;
}

}  // namespace murmur::gossip
