// What murmur-topo prints: a topology's graph in one round, its mixing
// weights, degrees, diameter and spectral gap, as text, JSON or Graphviz DOT.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "gossip/topology/metrics.h"
#include "gossip/topology/mixing.h"
#include "gossip/topology/topology.h"

namespace murmur::gossip {

struct TopologyReport {
  std::string name;
  bool time_varying = false;
  std::uint64_t period = 1;
  std::uint64_t round = 0;
  Graph graph;  // at `round`
  WeightScheme scheme = WeightScheme::kMetropolisHastings;
  Matrix weights;
  DegreeRange degree;
  std::optional<int> diameter;  // nullopt: not (strongly) connected this round
  double lambda2 = 0.0;         // second largest eigenvalue modulus
  double spectral_gap = 0.0;    // 1 - lambda2
  // Time-varying only: the gap of the product of the matrices of one period
  // (rounds round .. round + period - 1; at most 64 rounds).
  std::optional<double> period_spectral_gap;
};

// O(n^3) in the number of nodes (the eigenvalues).
TopologyReport analyse(const Topology& topology, std::uint64_t round);

void print_text(std::ostream& out, const TopologyReport& report);
void print_json(std::ostream& out, const TopologyReport& report);
// Undirected edges as "--", directed as "->", labelled with their weight
// and link class.
void print_dot(std::ostream& out, const TopologyReport& report);

}  // namespace murmur::gossip
