// Seeded random undirected graphs, redrawn until connected. The same seed
// gives the same graph on every platform (the generator is mt19937_64 and
// the draws from it are murmur's own, not the standard distributions, whose
// output differs between standard libraries).
//
// Throws TopologyError when no such connected graph exists, or when none was
// drawn within a bounded number of tries (the message says how to fix it).
#pragma once

#include <cstdint>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

// G(n, p): each pair is an edge with probability p. n >= 2, 0 < p <= 1.
Graph erdos_renyi(int n, double p, std::uint64_t seed);

// A uniformly-ish random simple d-regular graph (pairing model, stubs paired
// one at a time among admissible pairs, restarted when stuck). Needs
// 1 <= d < n, n * d even, and d >= 2 unless n == 2.
Graph random_regular(int n, int degree, std::uint64_t seed);

}  // namespace murmur::gossip
