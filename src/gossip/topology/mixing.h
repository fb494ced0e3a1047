// Mixing matrices: who averages what with whom in one gossip round.
//
// Convention: x_i <- sum_j W(i, j) x_j, so W(i, j) is the share of node j's
// value that lands at node i; an edge j -> i is needed for W(i, j) != 0.
//   - Metropolis-Hastings (undirected): W(i, j) = 1 / (1 + max(d_i, d_j)) on
//     edges, W(i, i) = 1 - sum of the row. Symmetric and doubly stochastic.
//   - Push-sum (directed or not): node j keeps and sends equal shares,
//     W(i, j) = 1 / (1 + outdeg(j)). Column stochastic.
//   - Given: the weights of a graph file (see docs/topology-format.md); a
//     missing self weight is 1 minus the node's row (undirected) or column
//     (directed) sum.
#pragma once

#include <string>
#include <vector>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

// A dense square matrix, row-major. Sizes here are the number of peers.
class Matrix {
 public:
  explicit Matrix(int n = 0) : n_(n), a_(static_cast<std::size_t>(n) * n, 0.0) {}
  static Matrix identity(int n);

  int size() const { return n_; }
  double& operator()(int r, int c) { return a_[static_cast<std::size_t>(r) * n_ + c]; }
  double operator()(int r, int c) const { return a_[static_cast<std::size_t>(r) * n_ + c]; }

 private:
  int n_;
  std::vector<double> a_;
};

Matrix multiply(const Matrix& a, const Matrix& b);
bool is_symmetric(const Matrix& w, double tolerance = 1e-12);
// Largest |row sum - 1| and |column sum - 1|.
double row_stochastic_error(const Matrix& w);
double column_stochastic_error(const Matrix& w);

enum class WeightScheme { kGiven, kMetropolisHastings, kPushSum };
std::string to_string(WeightScheme scheme);

// Given weights when the graph has them, else Metropolis-Hastings for an
// undirected graph and push-sum for a directed one.
WeightScheme default_scheme(const Graph& g);

// Throws TopologyError when the scheme does not fit the graph
// (Metropolis-Hastings on a directed graph, given weights on a graph without).
Matrix mixing_matrix(const Graph& g, WeightScheme scheme);
inline Matrix mixing_matrix(const Graph& g) { return mixing_matrix(g, default_scheme(g)); }

// One node's row of the mixing matrix: what it keeps of its own value, and
// the share of each in-neighbour's, in the order of g.in(node). O(degree),
// so that each rank of a large job computes only its own row (the matrix is
// n x n: 8 MiB per rank at 1024 peers). The matrices below are these rows.
struct MixingRow {
  double self = 0;
  std::vector<double> in;  // in[k]: W(node, g.in(node)[k].peer)
};
MixingRow mixing_row(const Graph& g, int node, WeightScheme scheme);
inline MixingRow mixing_row(const Graph& g, int node) { return mixing_row(g, node, default_scheme(g)); }

// What one node keeps of a round's graph: its links and its row (the
// whole Graph is O(n * degree) per rank).
struct Neighbourhood {
  std::vector<Link> in;
  std::vector<Link> out;
  MixingRow row;
};
Neighbourhood neighbourhood(const Graph& g, int node);

Matrix metropolis_hastings(const Graph& g);
Matrix push_sum(const Graph& g);
Matrix given_weights(const Graph& g);

}  // namespace murmur::gossip
