#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "gossip/topology/errors.h"
#include "gossip/topology/factory.h"
#include "gossip/topology/generators.h"
#include "gossip/topology/metrics.h"
#include "gossip/topology/one_peer_exponential.h"
#include "gossip/topology/random_graphs.h"

namespace murmur::gossip {
namespace {

std::set<std::pair<int, int>> edges(const Graph& g) {
  std::set<std::pair<int, int>> e;
  for (int i = 0; i < g.size(); ++i) {
    for (const Link& l : g.out(i)) e.emplace(i, l.peer);
  }
  return e;
}

void expect_regular(const Graph& g, int degree) {
  const DegreeRange d = degrees(g);
  EXPECT_EQ(d.min_out, degree);
  EXPECT_EQ(d.max_out, degree);
}

class SizeTest : public ::testing::TestWithParam<int> {};

TEST_P(SizeTest, Ring) {
  const int n = GetParam();
  const Graph g = ring(n);
  EXPECT_EQ(g.edge_count(), n == 2 ? 1u : static_cast<std::size_t>(n));
  expect_regular(g, n == 2 ? 1 : 2);
  EXPECT_TRUE(connected(g));
  EXPECT_EQ(diameter(g), n / 2);
}

TEST_P(SizeTest, Exponential) {
  const int n = GetParam();
  const Graph g = exponential(n);
  EXPECT_TRUE(connected(g));
  for (int i = 0; i < n; ++i) {
    std::set<int> expected;
    for (int hop = 1; hop < n; hop *= 2) {
      expected.insert((i + hop) % n);
      expected.insert(((i - hop) % n + n) % n);
    }
    std::set<int> got;
    for (const Link& l : g.out(i)) got.insert(l.peer);
    EXPECT_EQ(got, expected) << "node " << i;
  }
}

TEST_P(SizeTest, CompleteAndStar) {
  const int n = GetParam();
  const Graph k = complete(n);
  EXPECT_EQ(k.edge_count(), static_cast<std::size_t>(n) * (n - 1) / 2);
  expect_regular(k, n - 1);
  EXPECT_EQ(diameter(k), 1);
  const Graph s = star(n);
  EXPECT_EQ(s.edge_count(), static_cast<std::size_t>(n - 1));
  EXPECT_EQ(degrees(s).max_out, n - 1);
  EXPECT_EQ(degrees(s).min_out, 1);
  EXPECT_EQ(diameter(s), n == 2 ? 1 : 2);
}

TEST_P(SizeTest, TorusFromN) {
  const int n = GetParam();
  const auto [rows, cols] = torus_shape(n);
  EXPECT_EQ(rows * cols, n);
  EXPECT_LE(rows, cols);
  const Graph g = torus(rows, cols);
  EXPECT_TRUE(connected(g));
  EXPECT_EQ(diameter(g), rows / 2 + cols / 2);
}

TEST_P(SizeTest, OnePeerExponential) {
  const int n = GetParam();
  OnePeerExponential t(n);
  int tau = 0;
  while ((1 << tau) < n) ++tau;
  EXPECT_EQ(t.period(), static_cast<std::uint64_t>(tau));
  for (std::uint64_t round = 0; round < 2 * t.period(); ++round) {
    const Graph g = t.at_round(round);
    EXPECT_TRUE(g.directed());
    const DegreeRange d = degrees(g);
    EXPECT_EQ(d.min_out, 1);
    EXPECT_EQ(d.max_out, 1);
    EXPECT_EQ(d.min_in, 1);
    EXPECT_EQ(d.max_in, 1);
    const int hop = 1 << (round % tau);
    for (int i = 0; i < n; ++i) EXPECT_EQ(g.out(i)[0].peer, (i + hop) % n);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, SizeTest, ::testing::Values(2, 3, 5, 8, 12, 16, 31, 64));

TEST(Generators, Torus4x4) {
  const Graph g = torus(4, 4);
  EXPECT_EQ(g.edge_count(), 32u);
  expect_regular(g, 4);
  EXPECT_EQ(diameter(g), 4);
  EXPECT_TRUE(g.has_edge(0, 3));   // wraps along a row
  EXPECT_TRUE(g.has_edge(0, 12));  // wraps along a column
  EXPECT_EQ(torus(3, 5).size(), 15);
  expect_regular(torus(3, 5), 4);
}

TEST(Generators, Hypercube) {
  for (int n : {2, 4, 8, 16, 64}) {
    const Graph g = hypercube(n);
    int d = 0;
    while ((1 << d) < n) ++d;
    expect_regular(g, d);
    EXPECT_EQ(g.edge_count(), static_cast<std::size_t>(n) * d / 2);
    EXPECT_EQ(diameter(g), d);
  }
  EXPECT_THROW(hypercube(12), TopologyError);
  EXPECT_THROW(hypercube(1), TopologyError);
}

TEST(Generators, TooSmall) {
  EXPECT_THROW(ring(1), TopologyError);
  EXPECT_THROW(complete(0), TopologyError);
  EXPECT_THROW(torus(0, 4), TopologyError);
}

TEST(RandomGraphs, RegularDegreesAndConnectivity) {
  for (auto [n, d] : {std::pair{32, 4}, {10, 3}, {50, 2}, {20, 19}, {64, 8}}) {
    const Graph g = random_regular(n, d, 7);
    expect_regular(g, d);
    EXPECT_EQ(g.edge_count(), static_cast<std::size_t>(n) * d / 2);
    EXPECT_TRUE(connected(g));
  }
}

TEST(RandomGraphs, RegularDeterministicBySeed) {
  EXPECT_EQ(edges(random_regular(32, 4, 7)), edges(random_regular(32, 4, 7)));
  EXPECT_NE(edges(random_regular(32, 4, 7)), edges(random_regular(32, 4, 8)));
}

TEST(RandomGraphs, RegularImpossible) {
  try {
    random_regular(5, 3, 1);
    FAIL();
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("even"), std::string::npos) << e.what();
  }
  EXPECT_THROW(random_regular(8, 8, 1), TopologyError);
  EXPECT_THROW(random_regular(8, 0, 1), TopologyError);
  EXPECT_THROW(random_regular(8, 1, 1), TopologyError);  // a matching is never connected
}

TEST(RandomGraphs, ErdosRenyi) {
  const Graph g = erdos_renyi(32, 0.2, 1);
  EXPECT_TRUE(connected(g));
  // 496 pairs at p = 0.2: about 99 edges; far outside [50, 150] would be a bug.
  EXPECT_GT(g.edge_count(), 50u);
  EXPECT_LT(g.edge_count(), 150u);
  EXPECT_EQ(edges(erdos_renyi(32, 0.2, 1)), edges(g));
  EXPECT_NE(edges(erdos_renyi(32, 0.2, 2)), edges(g));
  EXPECT_EQ(erdos_renyi(10, 1.0, 3).edge_count(), 45u);
  EXPECT_THROW(erdos_renyi(32, 0.0, 1), TopologyError);
  EXPECT_THROW(erdos_renyi(32, 1.5, 1), TopologyError);
  EXPECT_THROW(erdos_renyi(50, 0.001, 1), TopologyError);  // hopelessly below ln(n)/n
}

TEST(Factory, NamesAndErrors) {
  for (const auto& name : generator_names()) {
    TopologySpec spec;
    spec.kind = name;
    auto t = make_topology(spec);
    EXPECT_EQ(t->size(), 16) << name;
    EXPECT_EQ(t->time_varying(), name == "one-peer-exponential") << name;
  }
  TopologySpec spec;
  spec.kind = "mesh";
  EXPECT_THROW(make_topology(spec), TopologyError);
  spec.kind = "torus";
  spec.rows = 3;
  spec.cols = 5;
  EXPECT_EQ(make_topology(spec)->size(), 15);
}

}  // namespace
}  // namespace murmur::gossip
