// topology_for_view (gossip/topology/view_topology.h) and the graph repairs
// under it (graph_repair.h): the graph every live peer rebuilds when the job
// loses members.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gossip/topology/factory.h"
#include "gossip/topology/graph_repair.h"
#include "gossip/topology/metrics.h"
#include "gossip/topology/mixing.h"
#include "gossip/topology/topo_file.h"
#include "gossip/topology/view_topology.h"

namespace murmur::gossip {
namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Same nodes, edges, labels and weights, bit for bit.
void expect_identical(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.directed(), b.directed());
  ASSERT_EQ(a.edge_count(), b.edge_count());
  for (int node = 0; node < a.size(); ++node) {
    EXPECT_TRUE(same_bits(a.self_weight(node), b.self_weight(node))) << "node " << node;
    ASSERT_EQ(a.out(node).size(), b.out(node).size()) << "node " << node;
    for (std::size_t k = 0; k < a.out(node).size(); ++k) {
      EXPECT_EQ(a.out(node)[k].peer, b.out(node)[k].peer);
      EXPECT_TRUE(same_bits(a.out(node)[k].weight, b.out(node)[k].weight));
      EXPECT_EQ(a.out(node)[k].label, b.out(node)[k].label);
    }
  }
}

void expect_identical(const Matrix& a, const Matrix& b) {
  ASSERT_EQ(a.size(), b.size());
  for (int i = 0; i < a.size(); ++i) {
    for (int j = 0; j < a.size(); ++j) EXPECT_TRUE(same_bits(a(i, j), b(i, j))) << i << ", " << j;
  }
}

void expect_symmetric_doubly_stochastic(const Matrix& w) {
  EXPECT_TRUE(is_symmetric(w, 0.0));
  EXPECT_LT(row_stochastic_error(w), 1e-12);
  EXPECT_LT(column_stochastic_error(w), 1e-12);
}

GossipOptions options_for(const std::string& topology) {
  GossipOptions options;
  options.topology = topology;
  options.topology_degree = 4;
  options.topology_probability = 0.5;
  options.topology_seed = 7;
  return options;
}

std::unique_ptr<Topology> generated(const GossipOptions& options, int nodes) {
  TopologySpec spec;
  spec.kind = options.topology;
  spec.nodes = nodes;
  spec.degree = options.topology_degree;
  spec.probability = options.topology_probability;
  spec.seed = options.topology_seed;
  return make_topology(spec);
}

std::unique_ptr<Topology> from_text(const std::string& name, const std::string& text) {
  std::istringstream in(text);
  return std::make_unique<StaticTopology>(name, parse_topology(in, name));
}

std::string source_file(const std::string& relative) { return std::string(MURMUR_SOURCE_DIR) + "/" + relative; }

// ---- generators ---------------------------------------------------------

class ViewOfGenerator : public ::testing::TestWithParam<std::string> {};

TEST_P(ViewOfGenerator, RegeneratesOnTheLiveNodesWithTheJobsSpec) {
  const GossipOptions options = options_for(GetParam());
  const auto full = generated(options, 16);
  const std::vector<int> live{0, 2, 3, 5, 8, 11, 12, 15};  // 8 of 16: a hypercube still exists
  const ViewTopology view = topology_for_view(options, *full, live);
  const auto expected = generated(options, 8);
  ASSERT_EQ(view.topology->size(), 8);
  EXPECT_EQ(view.topology->time_varying(), expected->time_varying());
  ASSERT_EQ(view.topology->period(), expected->period());
  for (std::uint64_t round = 0; round < expected->period(); ++round) {
    expect_identical(view.topology->at_round(round), expected->at_round(round));
  }
  EXPECT_TRUE(view.added_edges.empty());
  EXPECT_GT(view.spectral_gap, 0.0);
  EXPECT_NE(view.description.find("regenerated on 8 nodes"), std::string::npos) << view.description;
  EXPECT_NE(view.description.find("lost 1, 4, 6, 7, 9, 10, 13, 14"), std::string::npos) << view.description;
}

TEST_P(ViewOfGenerator, OneNodeHasNoEdgesAndTwoAreConnected) {
  const GossipOptions options = options_for(GetParam());
  const auto full = generated(options, 8);
  const ViewTopology one = topology_for_view(options, *full, {5});
  ASSERT_EQ(one.topology->size(), 1);
  EXPECT_EQ(one.topology->at_round(0).edge_count(), 0u);
  EXPECT_EQ(one.spectral_gap, 1.0);
  EXPECT_NE(one.description.find("a single node"), std::string::npos) << one.description;

  const ViewTopology two = topology_for_view(options, *full, {3, 6});
  ASSERT_EQ(two.topology->size(), 2);
  EXPECT_TRUE(connected(two.topology->at_round(0)));
  EXPECT_GT(two.spectral_gap, 0.0);
}

INSTANTIATE_TEST_SUITE_P(EachGenerator, ViewOfGenerator, ::testing::ValuesIn(generator_names()), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
});

TEST(ViewTopology, RandomRegularDegreeIsLoweredToOneThatExists) {
  const GossipOptions options = options_for("random");  // degree 4
  const auto full = generated(options, 8);
  // 4 nodes: d < 4, so 3 (4 * 3 even); 5 nodes: 4 stays; 3 nodes: 2.
  for (const auto& [live, degree] :
       std::vector<std::pair<std::vector<int>, int>>{{{0, 1, 2, 3}, 3}, {{0, 1, 2, 3, 4}, 4}, {{1, 4, 7}, 2}}) {
    const ViewTopology view = topology_for_view(options, *full, live);
    const DegreeRange range = degrees(view.topology->at_round(0));
    EXPECT_EQ(range.min_out, degree);
    EXPECT_EQ(range.max_out, degree);
    EXPECT_EQ(view.description.find("degree lowered") != std::string::npos, degree != 4) << view.description;
  }
}

TEST(ViewTopology, HypercubeThatNoLongerExistsIsCutDownAndReconnected) {
  const GossipOptions options = options_for("hypercube");
  const auto full = generated(options, 8);
  // Node 0's neighbours 1, 2 and 4 are lost: 0 is cut off from 3, 5, 6, 7.
  const std::vector<int> live{0, 3, 5, 6, 7};
  const ViewTopology view = topology_for_view(options, *full, live);
  ASSERT_EQ(view.topology->size(), 5);
  EXPECT_EQ(view.added_edges, (std::vector<std::pair<int, int>>{{0, 1}}));
  const Graph g = view.topology->at_round(0);
  EXPECT_TRUE(g.has_edge(0, 1));
  EXPECT_TRUE(g.has_edge(1, 4));  // job nodes 3 -- 7
  EXPECT_TRUE(connected(g));
  expect_symmetric_doubly_stochastic(mixing_matrix(g));
  EXPECT_GT(view.spectral_gap, 0.0);
  EXPECT_NE(view.description.find("hypercube cannot be made on 5 nodes"), std::string::npos) << view.description;
  EXPECT_NE(view.description.find("0-1 (job nodes 0-3)"), std::string::npos) << view.description;
}

// ---- graph files ----------------------------------------------------------

// Triangles {0,1,2} and {4,5,6} and the path 7 - 8, all hanging off node 3.
constexpr const char* kCutVertex = "nodes 9\nundirected\n0 1\n1 2\n2 0\n4 5\n5 6\n6 4\n7 8\n2 3\n3 4\n3 7\n";

TEST(ViewTopology, FileWithACutVertexLostIsReconnectedWithComponentsMinusOneEdges) {
  const auto full = from_text("cut.topo", kCutVertex);
  const std::vector<int> live{0, 1, 2, 4, 5, 6, 7, 8};
  const ViewTopology view = topology_for_view(options_for("cut.topo"), *full, live);
  // Components by lowest node: {0,1,2}, {3,4,5} (job 4,5,6), {6,7} (job 7,8).
  EXPECT_EQ(view.added_edges, (std::vector<std::pair<int, int>>{{0, 3}, {3, 6}}));
  const Graph g = view.topology->at_round(0);
  EXPECT_EQ(g.edge_count(), 7u + 2u);
  EXPECT_TRUE(connected(g));
  EXPECT_EQ(default_scheme(g), WeightScheme::kMetropolisHastings);
  expect_symmetric_doubly_stochastic(mixing_matrix(g));
  EXPECT_GT(view.spectral_gap, 0.0);
  EXPECT_EQ(view.topology->name(), "cut.topo");
  EXPECT_NE(view.description.find("3 components, added 2 edges (the fewest possible)"), std::string::npos)
      << view.description;
  EXPECT_NE(view.description.find("3-6 (job nodes 4-7)"), std::string::npos) << view.description;
}

TEST(ViewTopology, FileThatStaysConnectedGetsNoEdges) {
  const auto full = load_topology(source_file("topologies/exponential-16.topo"));
  const ViewTopology view = topology_for_view(options_for(full->name()), *full, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_TRUE(view.added_edges.empty());
  EXPECT_TRUE(connected(view.topology->at_round(0)));
  EXPECT_GT(view.spectral_gap, 0.0);
}

TEST(ViewTopology, FileWeightsAreDroppedOnlyWhenANodeIsLost) {
  const auto full = load_topology(source_file("topologies/cluster-2x4.topo"));
  const GossipOptions options = options_for(full->name());
  const ViewTopology all = topology_for_view(options, *full, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_identical(all.topology->at_round(0), full->at_round(0));
  EXPECT_EQ(default_scheme(all.topology->at_round(0)), WeightScheme::kGiven);

  const ViewTopology view = topology_for_view(options, *full, {1, 2, 3, 4, 5, 6, 7});
  const Graph g = view.topology->at_round(0);
  EXPECT_FALSE(g.weighted());
  EXPECT_EQ(g.out(0)[0].label, "nvlink");  // link classes survive
  expect_symmetric_doubly_stochastic(mixing_matrix(g));
  EXPECT_NE(view.description.find("own weights dropped"), std::string::npos) << view.description;
}

TEST(ViewTopology, DirectedFileGetsPushSumColumnsAndIsStronglyConnected) {
  const auto full = load_topology(source_file("topologies/exponential-8-directed.topo"));
  const ViewTopology view = topology_for_view(options_for(full->name()), *full, {0, 2, 3, 5, 6});
  const Graph g = view.topology->at_round(0);
  ASSERT_TRUE(g.directed());
  EXPECT_TRUE(connected(g));
  EXPECT_EQ(default_scheme(g), WeightScheme::kPushSum);
  EXPECT_LT(column_stochastic_error(mixing_matrix(g)), 1e-12);
  EXPECT_GT(view.spectral_gap, 0.0);
}

TEST(ViewTopology, DirectedCycleThroughComponentsSaysWhenItIsNotMinimal) {
  // Without node 4: 0 -> 2 and 1 -> 3, four components with two sources and
  // two sinks, so 2 edges would do; the cycle 0->1->2->3->0 adds 4.
  const auto full = from_text("d.topo", "nodes 5\ndirected\n0 2\n1 3\n2 4\n3 4\n4 0\n4 1\n");
  const ViewTopology view = topology_for_view(options_for("d.topo"), *full, {0, 1, 2, 3});
  EXPECT_EQ(view.added_edges, (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
  const Graph g = view.topology->at_round(0);
  EXPECT_TRUE(connected(g));
  EXPECT_LT(column_stochastic_error(mixing_matrix(g)), 1e-12);
  EXPECT_GT(view.spectral_gap, 0.0);
  EXPECT_NE(view.description.find("2 would do"), std::string::npos) << view.description;
  EXPECT_NE(view.description.find("3->0 (job nodes 3->0)"), std::string::npos) << view.description;
}

TEST(ViewTopology, DirectedCycleSkipsEdgesThatExist) {
  // A directed 4-cycle without node 2: 0 -> 1 and 3 -> 0 remain; only 1 -> 3
  // is missing, and one edge is the fewest possible.
  const auto full = from_text("c.topo", "nodes 4\ndirected\n0 1\n1 2\n2 3\n3 0\n");
  const ViewTopology view = topology_for_view(options_for("c.topo"), *full, {0, 1, 3});
  EXPECT_EQ(view.added_edges, (std::vector<std::pair<int, int>>{{1, 2}}));
  EXPECT_TRUE(connected(view.topology->at_round(0)));
  EXPECT_NE(view.description.find("added 1 edge (the fewest possible)"), std::string::npos) << view.description;
}

TEST(ViewTopology, FileViewsOfOneAndTwoNodes) {
  const auto full = from_text("cut.topo", kCutVertex);
  const ViewTopology one = topology_for_view(options_for("cut.topo"), *full, {3});
  EXPECT_EQ(one.topology->size(), 1);
  EXPECT_EQ(one.topology->at_round(0).edge_count(), 0u);
  EXPECT_EQ(one.spectral_gap, 1.0);
  // 0 and 8 are far apart: one added edge joins them.
  const ViewTopology two = topology_for_view(options_for("cut.topo"), *full, {0, 8});
  EXPECT_EQ(two.added_edges, (std::vector<std::pair<int, int>>{{0, 1}}));
  EXPECT_GT(two.spectral_gap, 0.0);
}

// ---- determinism and input checks -----------------------------------------

TEST(ViewTopology, SameInputsGiveIdenticalGraphsAndWeights) {
  const auto file = from_text("cut.topo", kCutVertex);
  const std::vector<int> live{0, 1, 2, 4, 6, 7, 8};
  const auto first = topology_for_view(options_for("cut.topo"), *file, live);
  const auto second = topology_for_view(options_for("cut.topo"), *from_text("cut.topo", kCutVertex), live);
  expect_identical(first.topology->at_round(0), second.topology->at_round(0));
  expect_identical(mixing_matrix(first.topology->at_round(0)), mixing_matrix(second.topology->at_round(0)));
  EXPECT_EQ(first.added_edges, second.added_edges);
  EXPECT_EQ(first.description, second.description);
  for (const char* kind : {"random", "erdos-renyi", "one-peer-exponential"}) {
    const GossipOptions options = options_for(kind);
    const std::vector<int> view_nodes{1, 2, 3, 5, 8, 9, 13};
    const auto a = topology_for_view(options, *generated(options, 16), view_nodes);
    const auto b = topology_for_view(options, *generated(options, 16), view_nodes);
    expect_identical(a.topology->at_round(0), b.topology->at_round(0));
    expect_identical(mixing_matrix(a.topology->at_round(0)), mixing_matrix(b.topology->at_round(0)));
    EXPECT_TRUE(same_bits(a.spectral_gap, b.spectral_gap)) << kind;
    EXPECT_EQ(a.description, b.description);
  }
}

TEST(ViewTopology, RefusesAViewThatIsNotOfTheJob) {
  const GossipOptions options = options_for("ring");
  const auto full = generated(options, 4);
  EXPECT_THROW(topology_for_view(options, *full, {}), std::invalid_argument);
  EXPECT_THROW(topology_for_view(options, *full, {2, 1}), std::invalid_argument);
  EXPECT_THROW(topology_for_view(options, *full, {1, 1}), std::invalid_argument);
  try {
    topology_for_view(options, *full, {0, 4});
    ADD_FAILURE() << "node 4 of a 4-node job was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("live[1] = 4"), std::string::npos) << e.what();
  }
}

TEST(ViewTopology, SpectralGapIsSkippedAboveTheLimit) {
  const GossipOptions options = options_for("ring");
  const auto full = generated(options, kSpectralGapMaxNodes + 2);
  std::vector<int> live(static_cast<std::size_t>(kSpectralGapMaxNodes + 1));
  for (std::size_t k = 0; k < live.size(); ++k) live[k] = static_cast<int>(k);
  const ViewTopology view = topology_for_view(options, *full, live);
  EXPECT_TRUE(std::isnan(view.spectral_gap));
  EXPECT_NE(view.description.find("not computed"), std::string::npos) << view.description;
}

// ---- graph_repair on its own -----------------------------------------------

TEST(GraphRepair, ComponentsAreSortedAndOrderedByLowestNode) {
  Graph g(6, false);
  g.add_edge(5, 1);
  g.add_edge(2, 4);
  g.add_edge(4, 0);
  EXPECT_EQ(components(g), (std::vector<std::vector<int>>{{0, 2, 4}, {1, 5}, {3}}));
  const Reconnection mend = reconnect(g);
  EXPECT_EQ(mend.components, 3u);
  EXPECT_EQ(mend.fewest_possible, 2u);
  EXPECT_EQ(mend.added, (std::vector<std::pair<int, int>>{{0, 1}, {1, 3}}));
  EXPECT_TRUE(connected(g));
  EXPECT_EQ(reconnect(g).added.size(), 0u);
}

TEST(GraphRepair, StronglyConnectedComponentsOfALongPath) {
  // A 2,000-node directed path: 2,000 components, and no recursion to overflow.
  Graph g(2000, true);
  for (int i = 0; i + 1 < 2000; ++i) g.add_edge(i, i + 1);
  EXPECT_EQ(components(g).size(), 2000u);
  const Reconnection mend = reconnect(g);
  EXPECT_EQ(mend.fewest_possible, 1u);
  EXPECT_EQ(mend.added, (std::vector<std::pair<int, int>>{{1999, 0}}));
  EXPECT_TRUE(connected(g));
}

}  // namespace
}  // namespace murmur::gossip
