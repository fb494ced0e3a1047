// Deterministic undirected graph generators. Each throws TopologyError when
// the graph cannot exist (too few nodes, a hypercube whose size is not a
// power of two), with the reason and the valid range.
#pragma once

#include <utility>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

// i -- i+1 (mod n). n >= 2 (n == 2 is a single edge).
Graph ring(int n);
// i -- i +- 2^k (mod n) for every 2^k < n: a circulant graph of diameter
// about log2 n.
Graph exponential(int n);
// rows x cols grid with wrap-around: (r, c) -- (r+-1, c), (r, c+-1).
// Node id r * cols + c. rows, cols >= 1, rows * cols >= 2.
Graph torus(int rows, int cols);
// The squarest rows x cols = n with rows <= cols (rows is n's largest
// divisor not above sqrt(n); 1 x n for a prime n).
std::pair<int, int> torus_shape(int n);
// i -- i xor 2^k. n must be a power of two, n >= 2.
Graph hypercube(int n);
// 0 -- i for every i > 0. n >= 2.
Graph star(int n);
// Every pair. n >= 2.
Graph complete(int n);

}  // namespace murmur::gossip
