#include "gossip/topology/topology.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/check.h"

namespace murmur::gossip {

namespace {
void insert_sorted(std::vector<Link>& links, Link link) {
  auto pos =
      std::lower_bound(links.begin(), links.end(), link.peer, [](const Link& l, int peer) { return l.peer < peer; });
  links.insert(pos, std::move(link));
}
}  // namespace

Graph::Graph(int nodes, bool directed)
    : directed_(directed),
      out_(static_cast<std::size_t>(nodes)),
      in_(directed ? static_cast<std::size_t>(nodes) : 0),
      self_(static_cast<std::size_t>(nodes), kNoWeight) {
  MURMUR_CHECK_GE(nodes, 0);
}

std::uint64_t Graph::key(int a, int b) const {
  if (!directed_ && a > b) std::swap(a, b);
  return static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(size()) + static_cast<std::uint64_t>(b);
}

void Graph::add_edge(int a, int b, double weight, std::string label) {
  MURMUR_CHECK_GE(a, 0);
  MURMUR_CHECK_LT(a, size());
  MURMUR_CHECK_GE(b, 0);
  MURMUR_CHECK_LT(b, size());
  MURMUR_CHECK_NE(a, b);
  MURMUR_CHECK(edges_.insert(key(a, b)).second);
  ++edge_count_;
  if (!std::isnan(weight)) ++weighted_edges_;
  insert_sorted(out_[a], Link{b, weight, label});
  if (directed_) {
    insert_sorted(in_[b], Link{a, weight, std::move(label)});
  } else {
    insert_sorted(out_[b], Link{a, weight, std::move(label)});
  }
}

bool Graph::has_edge(int a, int b) const {
  if (a < 0 || b < 0 || a >= size() || b >= size()) return false;
  return edges_.count(key(a, b)) > 0;
}

const std::vector<Link>& Graph::out(int node) const {
  MURMUR_CHECK_GE(node, 0);
  MURMUR_CHECK_LT(node, size());
  return out_[node];
}

const std::vector<Link>& Graph::in(int node) const {
  MURMUR_CHECK_GE(node, 0);
  MURMUR_CHECK_LT(node, size());
  return directed_ ? in_[node] : out_[node];
}

void Graph::set_self_weight(int node, double weight) {
  MURMUR_CHECK_GE(node, 0);
  MURMUR_CHECK_LT(node, size());
  self_[node] = weight;
}

double Graph::self_weight(int node) const {
  MURMUR_CHECK_GE(node, 0);
  MURMUR_CHECK_LT(node, size());
  return self_[node];
}

StaticTopology::StaticTopology(std::string name, Graph graph) : name_(std::move(name)), graph_(std::move(graph)) {}

}  // namespace murmur::gossip
