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
    case WeightScheme::kGiven: return "given";
    case WeightScheme::kMetropolisHastings: return "metropolis-hastings";
    case WeightScheme::kPushSum: return "push-sum";
  }
  return "?";
}

WeightScheme default_scheme(const Graph& g) {
  if (g.weighted()) return WeightScheme::kGiven;
  return g.directed() ? WeightScheme::kPushSum : WeightScheme::kMetropolisHastings;
}

Matrix mixing_matrix(const Graph& g, WeightScheme scheme) {
  switch (scheme) {
    case WeightScheme::kGiven: return given_weights(g);
    case WeightScheme::kMetropolisHastings: return metropolis_hastings(g);
    case WeightScheme::kPushSum: return push_sum(g);
  }
  MURMUR_CHECK(false);
}

Matrix metropolis_hastings(const Graph& g) {
  if (g.directed()) {
    throw TopologyError("Metropolis-Hastings weights need an undirected graph; use push-sum");
  }
  Matrix w(g.size());
  for (int i = 0; i < g.size(); ++i) {
    const auto di = g.out(i).size();
    double off = 0.0;
    for (const Link& l : g.out(i)) {
      const double wij = 1.0 / (1.0 + static_cast<double>(std::max(di, g.out(l.peer).size())));
      w(i, l.peer) = wij;
      off += wij;
    }
    w(i, i) = 1.0 - off;
  }
  return w;
}

Matrix push_sum(const Graph& g) {
  Matrix w(g.size());
  for (int j = 0; j < g.size(); ++j) {
    const double share = 1.0 / (1.0 + static_cast<double>(g.out(j).size()));
    w(j, j) = share;
    for (const Link& l : g.out(j)) w(l.peer, j) = share;
  }
  return w;
}

Matrix given_weights(const Graph& g) {
  if (!g.weighted()) {
    throw TopologyError("the graph carries no weights on some edges; use metropolis-hastings "
                        "or push-sum weights");
  }
  Matrix w(g.size());
  for (int j = 0; j < g.size(); ++j) {
    double sent = 0.0;
    for (const Link& l : g.out(j)) {
      w(l.peer, j) = l.weight;  // j's value reaching l.peer; symmetric when undirected
      sent += l.weight;
    }
    const double self = g.self_weight(j);
    w(j, j) = std::isnan(self) ? 1.0 - sent : self;
  }
  return w;
}

}  // namespace murmur::gossip
