#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <vector>

#include "gossip/topology/errors.h"
#include "gossip/topology/generators.h"
#include "gossip/topology/mixing.h"
#include "gossip/topology/one_peer_exponential.h"
#include "gossip/topology/random_graphs.h"
#include "gossip/topology/spectral.h"

namespace murmur::gossip {
namespace {

constexpr double kTol = 1e-9;
constexpr double kPi = std::numbers::pi;

void expect_doubly_stochastic_symmetric(const Matrix& w) {
  EXPECT_TRUE(is_symmetric(w, 1e-15));
  EXPECT_LT(row_stochastic_error(w), 1e-12);
  EXPECT_LT(column_stochastic_error(w), 1e-12);
  for (int i = 0; i < w.size(); ++i) {
    for (int j = 0; j < w.size(); ++j) EXPECT_GE(w(i, j), 0.0);
  }
}

// Ring with MH weights: 1/3 + 2/3 cos(2 pi k / n).
double ring_gap(int n) {
  double worst = 0.0;
  for (int k = 1; k < n; ++k) {
    worst = std::max(worst, std::abs(1.0 / 3 + 2.0 / 3 * std::cos(2 * kPi * k / n)));
  }
  return 1.0 - worst;
}

// A circulant symmetric matrix's eigenvalues are the DFT of its first row.
std::vector<double> circulant_eigenvalues(const Matrix& w) {
  const int n = w.size();
  std::vector<double> values;
  for (int k = 0; k < n; ++k) {
    double re = 0.0;
    for (int j = 0; j < n; ++j) re += w(0, j) * std::cos(2 * kPi * k * j / n);
    values.push_back(re);
  }
  std::sort(values.begin(), values.end(), std::greater<>());
  return values;
}

TEST(Mixing, MetropolisHastingsOnEveryGenerator) {
  for (const Graph& g : {ring(9), exponential(16), exponential(13), torus(3, 5), hypercube(32), star(7), complete(6),
                         erdos_renyi(40, 0.15, 3), random_regular(30, 5, 2)}) {
    const Matrix w = metropolis_hastings(g);
    expect_doubly_stochastic_symmetric(w);
    for (int i = 0; i < g.size(); ++i) {
      for (const Link& l : g.out(i)) {
        const double d = static_cast<double>(std::max(g.out(i).size(), g.out(l.peer).size()));
        EXPECT_DOUBLE_EQ(w(i, l.peer), 1.0 / (1.0 + d));
      }
    }
  }
}

TEST(Mixing, MetropolisHastingsRefusesDirected) {
  EXPECT_THROW(metropolis_hastings(OnePeerExponential(8).at_round(0)), TopologyError);
}

TEST(Mixing, PushSumColumnsSumToOne) {
  Graph g(5, true);
  g.add_edge(0, 1);
  g.add_edge(0, 2);
  g.add_edge(1, 2);
  g.add_edge(2, 3);
  g.add_edge(3, 4);
  g.add_edge(4, 0);
  const Matrix w = push_sum(g);
  EXPECT_LT(column_stochastic_error(w), 1e-15);
  EXPECT_GT(row_stochastic_error(w), 0.1);  // not doubly stochastic: that is push-sum's point
  EXPECT_DOUBLE_EQ(w(1, 0), 1.0 / 3);
  EXPECT_DOUBLE_EQ(w(0, 0), 1.0 / 3);
  EXPECT_DOUBLE_EQ(w(3, 2), 0.5);
  EXPECT_EQ(w(0, 1), 0.0);
  const auto pi = perron_vector(w);
  for (int i = 0; i < 5; ++i) {
    double s = 0.0;
    for (int j = 0; j < 5; ++j) s += w(i, j) * pi[j];
    EXPECT_NEAR(s, pi[i], 1e-12);
  }
  const double gap = spectral_gap(w);
  EXPECT_GT(gap, 0.0);
  EXPECT_LT(gap, 1.0);
}

TEST(Spectral, JacobiMatchesClosedForm) {
  // Ring eigenvalues, all of them.
  const int n = 12;
  const auto values = symmetric_eigenvalues(metropolis_hastings(ring(n)));
  std::vector<double> expected;
  for (int k = 0; k < n; ++k) expected.push_back(1.0 / 3 + 2.0 / 3 * std::cos(2 * kPi * k / n));
  std::sort(expected.begin(), expected.end(), std::greater<>());
  ASSERT_EQ(values.size(), expected.size());
  for (int k = 0; k < n; ++k) EXPECT_NEAR(values[k], expected[k], kTol);
}

TEST(Spectral, RingGap) {
  for (int n : {3, 4, 5, 8, 16, 33, 64, 100}) {
    EXPECT_NEAR(spectral_gap(metropolis_hastings(ring(n))), ring_gap(n), kTol) << n;
  }
}

TEST(Spectral, CompleteGapIsOne) {
  for (int n : {2, 3, 10, 50}) {
    EXPECT_NEAR(spectral_gap(metropolis_hastings(complete(n))), 1.0, kTol) << n;
    // Push-sum on the complete graph is exact averaging too.
    Graph g(n, true);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i != j) g.add_edge(i, j);
      }
    }
    EXPECT_NEAR(spectral_gap(push_sum(g)), 1.0, kTol) << n;
  }
}

TEST(Spectral, HypercubeEigenvalues) {
  // MH weights 1/(d+1): eigenvalues 1 - 2k/(d+1), k = 0..d, multiplicity C(d, k).
  for (int d : {1, 2, 3, 4, 5, 6}) {
    const int n = 1 << d;
    const Matrix w = metropolis_hastings(hypercube(n));
    const auto values = symmetric_eigenvalues(w);
    std::vector<double> expected;
    for (int node = 0; node < n; ++node) {
      expected.push_back(1.0 - 2.0 * __builtin_popcount(node) / (d + 1));
    }
    std::sort(expected.begin(), expected.end(), std::greater<>());
    for (int i = 0; i < n; ++i) EXPECT_NEAR(values[i], expected[i], kTol) << "d=" << d;
    // |lambda_2| = max(1 - 2/(d+1), |1 - 2d/(d+1)|) = (d-1)/(d+1).
    EXPECT_NEAR(spectral_gap(w), 2.0 / (d + 1), kTol) << "d=" << d;
  }
}

TEST(Spectral, ExponentialIsCirculant) {
  for (int n : {4, 8, 13, 16, 32, 50}) {
    const Matrix w = metropolis_hastings(exponential(n));
    const auto dft = circulant_eigenvalues(w);
    const auto values = symmetric_eigenvalues(w);
    for (int k = 0; k < n; ++k) EXPECT_NEAR(values[k], dft[k], kTol) << n;
    double lambda2 = 0.0;
    for (int k = 1; k < n; ++k) lambda2 = std::max(lambda2, std::abs(dft[k]));
    EXPECT_NEAR(spectral_gap(w), 1.0 - lambda2, kTol) << n;
  }
  // n = 16: offsets +-1, +-2, +-4, 8; weight 1/8; k = 8 gives (1 - 2 + 2 + 2 + 1) / 8.
  EXPECT_NEAR(spectral_gap(metropolis_hastings(exponential(16))), 0.5, kTol);
}

TEST(Spectral, DirectedCirculantMatchesDft) {
  // Directed exponential i -> i + 1, 2, 4 on 8 nodes with push-sum weights
  // 1/4: eigenvalues (1 + w^k + w^2k + w^4k) / 4, complex.
  const int n = 8;
  Graph g(n, true);
  for (int i = 0; i < n; ++i) {
    for (int hop : {1, 2, 4}) g.add_edge(i, (i + hop) % n);
  }
  double lambda2 = 0.0;
  for (int k = 1; k < n; ++k) {
    double re = 0.25, im = 0.0;
    for (int hop : {1, 2, 4}) {
      re += 0.25 * std::cos(2 * kPi * k * hop / n);
      im += 0.25 * std::sin(2 * kPi * k * hop / n);
    }
    lambda2 = std::max(lambda2, std::hypot(re, im));
  }
  EXPECT_NEAR(second_eigenvalue_modulus(push_sum(g)), lambda2, 1e-9);
}

TEST(Spectral, OnePeerExponentialPeriodIsExactAveraging) {
  for (int n : {4, 8, 16, 32}) {
    OnePeerExponential t(n);
    Matrix product = Matrix::identity(n);
    for (std::uint64_t r = 0; r < t.period(); ++r) {
      const Matrix w = push_sum(t.at_round(r));
      EXPECT_LT(column_stochastic_error(w), 1e-15);
      EXPECT_LT(row_stochastic_error(w), 1e-15);  // one in-neighbour too
      product = multiply(w, product);
    }
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) EXPECT_NEAR(product(i, j), 1.0 / n, 1e-12);
    }
    EXPECT_NEAR(spectral_gap(product), 1.0, 1e-9);
    // One round alone: W = (I + shift by 1) / 2, |lambda_2| = cos(pi / n).
    EXPECT_NEAR(second_eigenvalue_modulus(push_sum(t.at_round(0))), std::cos(kPi / n), 1e-9);
  }
}

TEST(Spectral, DisconnectedHasNoGap) {
  Graph g(4, false);
  g.add_edge(0, 1);
  g.add_edge(2, 3);
  EXPECT_NEAR(spectral_gap(metropolis_hastings(g)), 0.0, 1e-12);
}

}  // namespace
}  // namespace murmur::gossip
