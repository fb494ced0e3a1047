#include "gossip/topology/mixing.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "gossip/topology/errors.h"

namespace murmur::gossip {

Matrix Matrix::identity(int n) {
  Matrix m(n);
  for (int i = 0; i < n; ++i) m(i, i) = 1.0;
  return m;
}

Matrix multiply(const Matrix& a, const Matrix& b) {
  MURMUR_CHECK_EQ(a.size(), b.size());
  const int n = a.size();
  Matrix c(n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < n; ++k) {
      const double aik = a(i, k);
      if (aik == 0.0) continue;
      for (int j = 0; j < n; ++j) c(i, j) += aik * b(k, j);
    }
  }
  return c;
}

bool is_symmetric(const Matrix& w, double tolerance) {
  for (int i = 0; i < w.size(); ++i) {
    for (int j = i + 1; j < w.size(); ++j) {
      if (std::abs(w(i, j) - w(j, i)) > tolerance) return false;
    }
  }
  return true;
}

double row_stochastic_error(const Matrix& w) {
  double worst = 0.0;
  for (int i = 0; i < w.size(); ++i) {
    double sum = 0.0;
    for (int j = 0; j < w.size(); ++j) sum += w(i, j);
    worst = std::max(worst, std::abs(sum - 1.0));
  }
  return worst;
}

double column_stochastic_error(const Matrix& w) {
  double worst = 0.0;
  for (int j = 0; j < w.size(); ++j) {
    double sum = 0.0;
    for (int i = 0; i < w.size(); ++i) sum += w(i, j);
    worst = std::max(worst, std::abs(sum - 1.0));
  }
  return worst;
}

std::string to_string(WeightScheme scheme) {
  switch (scheme) {
    case WeightScheme::kGiven:
      return "given";
    case WeightScheme::kMetropolisHastings:
      return "metropolis-hastings";
    case WeightScheme::kPushSum:
      return "push-sum";
  }
  return "?";
}

WeightScheme default_scheme(const Graph& g) {
  if (g.weighted()) return WeightScheme::kGiven;
  return g.directed() ? WeightScheme::kPushSum : WeightScheme::kMetropolisHastings;
}

Matrix mixing_matrix(const Graph& g, WeightScheme scheme) {
  switch (scheme) {
    case WeightScheme::kGiven:
      return given_weights(g);
    case WeightScheme::kMetropolisHastings:
      return metropolis_hastings(g);
    case WeightScheme::kPushSum:
      return push_sum(g);
  }
  MURMUR_CHECK(false);
}

namespace {

void check_scheme_fits(const Graph& g, WeightScheme scheme) {
  if (scheme == WeightScheme::kMetropolisHastings && g.directed())
    throw TopologyError("Metropolis-Hastings weights need an undirected graph; use push-sum");
  if (scheme == WeightScheme::kGiven && !g.weighted())
    throw TopologyError(
        "the graph carries no weights on some edges; use metropolis-hastings "
        "or push-sum weights");
}

double degree(const Graph& g, int node) { return static_cast<double>(g.out(node).size()); }

// W(i, j) on an edge j -> i.
double edge_weight(const Graph& g, int i, const Link& from_j, WeightScheme scheme) {
  switch (scheme) {
    case WeightScheme::kMetropolisHastings:
      return 1.0 / (1.0 + std::max(degree(g, i), degree(g, from_j.peer)));
    case WeightScheme::kPushSum:
      return 1.0 / (1.0 + degree(g, from_j.peer));  // j keeps and sends equal shares
    case WeightScheme::kGiven:
      return from_j.weight;  // j's value reaching i; symmetric when undirected
  }
  MURMUR_CHECK(false);
}

}  // namespace

MixingRow mixing_row(const Graph& g, int node, WeightScheme scheme) {
  check_scheme_fits(g, scheme);
  MixingRow row;
  for (const Link& l : g.in(node)) row.in.push_back(edge_weight(g, node, l, scheme));
  switch (scheme) {
    case WeightScheme::kMetropolisHastings: {
      // Rows sum to 1 (undirected: in == out).
      double off = 0.0;
      for (double w : row.in) off += w;
      row.self = 1.0 - off;
      break;
    }
    case WeightScheme::kPushSum:
      row.self = 1.0 / (1.0 + degree(g, node));
      break;
    case WeightScheme::kGiven: {
      // Columns sum to 1: the node keeps what it does not send.
      const double self = g.self_weight(node);
      double sent = 0.0;
      for (const Link& l : g.out(node)) sent += l.weight;
      row.self = std::isnan(self) ? 1.0 - sent : self;
      break;
    }
  }
  return row;
}

Neighbourhood neighbourhood(const Graph& g, int node) { return {g.in(node), g.out(node), mixing_row(g, node)}; }

namespace {

Matrix from_rows(const Graph& g, WeightScheme scheme) {
  Matrix w(g.size());
  for (int i = 0; i < g.size(); ++i) {
    const MixingRow row = mixing_row(g, i, scheme);
    w(i, i) = row.self;
    for (std::size_t k = 0; k < row.in.size(); ++k) w(i, g.in(i)[k].peer) = row.in[k];
  }
  return w;
}

}  // namespace

Matrix metropolis_hastings(const Graph& g) { return from_rows(g, WeightScheme::kMetropolisHastings); }
Matrix push_sum(const Graph& g) { return from_rows(g, WeightScheme::kPushSum); }
Matrix given_weights(const Graph& g) { return from_rows(g, WeightScheme::kGiven); }

}  // namespace murmur::gossip
