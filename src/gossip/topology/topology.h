// The communication graph of one gossip round, and the Topology interface
// that hands out one graph per round (static and time-varying topologies
// alike).
//
// Nodes are 0..size()-1. An undirected graph stores each edge once per end;
// a directed edge a -> b means "a sends to b". Edges and self loops may carry
// explicit mixing weights (from a graph file); generators leave them unset
// and the weights come from mixing.h.
//
// Thread-safety: a Graph is a value; concurrent const use is safe.
// Topology::at_round is const and pure, so it is safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace murmur::gossip {

// Marks an edge or self loop without an explicit weight.
inline constexpr double kNoWeight = std::numeric_limits<double>::quiet_NaN();

// One end of an edge, seen from a node: the other node, the weight (or
// kNoWeight) and an optional link class ("nvlink", "ib"...).
struct Link {
  int peer = 0;
  double weight = kNoWeight;
  std::string label;
};

class Graph {
 public:
  Graph() = default;
  Graph(int nodes, bool directed);

  int size() const { return static_cast<int>(out_.size()); }
  bool directed() const { return directed_; }

  // Adds a -> b (and b -> a when undirected). A self loop, a node out of
  // range or a duplicate edge is a bug here (MURMUR_CHECK); parsers check
  // first and raise TopologyError with the file and line.
  void add_edge(int a, int b, double weight = kNoWeight, std::string label = {});
  bool has_edge(int a, int b) const;

  // Neighbours this node sends to, sorted by peer. For an undirected graph
  // out() and in() are the same list.
  const std::vector<Link>& out(int node) const;
  // Neighbours this node receives from, sorted by peer.
  const std::vector<Link>& in(int node) const;

  // Edges, each undirected edge counted once.
  std::size_t edge_count() const { return edge_count_; }

  // Explicit self weight of a node, or kNoWeight.
  void set_self_weight(int node, double weight);
  double self_weight(int node) const;

  // True when every edge carries an explicit weight (and there is an edge).
  bool weighted() const { return edge_count_ > 0 && weighted_edges_ == edge_count_; }
  // True when some edge, but not every edge, carries a weight.
  bool partly_weighted() const { return weighted_edges_ > 0 && weighted_edges_ < edge_count_; }

 private:
  std::uint64_t key(int a, int b) const;

  bool directed_ = false;
  std::vector<std::vector<Link>> out_;
  std::vector<std::vector<Link>> in_;  // empty when undirected
  std::vector<double> self_;
  std::unordered_set<std::uint64_t> edges_;
  std::size_t edge_count_ = 0;
  std::size_t weighted_edges_ = 0;
};

// A graph per gossip round. Implementations are final.
class Topology {
 public:
  virtual ~Topology() = default;

  // What made it: "ring", "one-peer-exponential", a file path.
  virtual std::string name() const = 0;
  virtual int size() const = 0;
  // False when at_round returns the same graph for every round.
  virtual bool time_varying() const = 0;
  // at_round(r) == at_round(r + period()); 1 for a static topology.
  virtual std::uint64_t period() const = 0;
  // The graph used in round `round`. Never blocks; O(edges).
  virtual Graph at_round(std::uint64_t round) const = 0;
};

// The same graph in every round.
class StaticTopology final : public Topology {
 public:
  StaticTopology(std::string name, Graph graph);

  std::string name() const override { return name_; }
  int size() const override { return graph_.size(); }
  bool time_varying() const override { return false; }
  std::uint64_t period() const override { return 1; }
  Graph at_round(std::uint64_t) const override { return graph_; }

  const Graph& graph() const { return graph_; }

 private:
  std::string name_;
  Graph graph_;
};

}  // namespace murmur::gossip
