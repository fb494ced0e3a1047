// The one place that turns a generator name and its parameters into a
// Topology (or reads a graph file). Used by murmur-topo and by Peer configs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

struct TopologySpec {
  std::string kind;           // a name from generator_names()
  int nodes = 16;             // n
  double probability = 0.25;  // erdos-renyi p
  int degree = 4;             // random-regular d
  std::uint64_t seed = 1;     // erdos-renyi, random-regular
  int rows = 0;               // torus; 0: from nodes
  int cols = 0;
};

// "ring", "exponential", "one-peer-exponential", "erdos-renyi", "random"
// (random regular), "torus", "hypercube", "star", "complete".
const std::vector<std::string>& generator_names();
bool is_generator(const std::string& kind);

// Throws TopologyError for an unknown kind or parameters the graph cannot
// have. Blocks only for the time the generator takes (O(n^2) at worst).
std::unique_ptr<Topology> make_topology(const TopologySpec& spec);

// A StaticTopology named after the file; throws TopologyError "path:line: ...".
std::unique_ptr<Topology> load_topology(const std::string& path);

}  // namespace murmur::gossip
