#include "gossip/topology/metrics.h"

#include <algorithm>
#include <vector>

namespace murmur::gossip {

namespace {
// Hop distances from `source`, -1 where unreachable; `forward` follows out-edges,
// otherwise in-edges.
std::vector<int> bfs(const Graph& g, int source, bool forward) {
  std::vector<int> dist(static_cast<std::size_t>(g.size()), -1);
  std::vector<int> queue{source};
  dist[source] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const int u = queue[head];
    for (const Link& l : forward ? g.out(u) : g.in(u)) {
      if (dist[l.peer] < 0) {
        dist[l.peer] = dist[u] + 1;
        queue.push_back(l.peer);
      }
    }
  }
  return dist;
}
}  // namespace

DegreeRange degrees(const Graph& g) {
  DegreeRange r;
  if (g.size() == 0) return r;
  r.min_out = r.min_in = g.size();
  for (int i = 0; i < g.size(); ++i) {
    const int out = static_cast<int>(g.out(i).size());
    const int in = static_cast<int>(g.in(i).size());
    r.min_out = std::min(r.min_out, out);
    r.max_out = std::max(r.max_out, out);
    r.min_in = std::min(r.min_in, in);
    r.max_in = std::max(r.max_in, in);
  }
  return r;
}

std::optional<int> unreachable_node(const Graph& g) {
  if (g.size() == 0) return std::nullopt;
  for (bool forward : {true, false}) {
    if (!forward && !g.directed()) break;
    const std::vector<int> dist = bfs(g, 0, forward);
    for (int i = 0; i < g.size(); ++i) {
      if (dist[i] < 0) return i;
    }
  }
  return std::nullopt;
}

std::optional<int> diameter(const Graph& g) {
  int longest = 0;
  for (int s = 0; s < g.size(); ++s) {
    for (int d : bfs(g, s, true)) {
      if (d < 0) return std::nullopt;
      longest = std::max(longest, d);
    }
  }
  return longest;
}

}  // namespace murmur::gossip
