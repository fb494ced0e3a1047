#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gossip/topology/errors.h"
#include "gossip/topology/metrics.h"
#include "gossip/topology/mixing.h"
#include "gossip/topology/report.h"
#include "gossip/topology/spectral.h"
#include "gossip/topology/topo_file.h"

namespace murmur::gossip {
namespace {

Graph parse(const std::string& text) {
  std::istringstream in(text);
  return parse_topology(in, "t.topo");
}

// The error message of parsing `text`, or "" if it parsed.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const TopologyError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_REFUSED(text, where, words)                               \
  do {                                                                   \
    const std::string msg = error_of(text);                              \
    EXPECT_EQ(msg.rfind(where, 0), 0u) << "message: " << msg;            \
    EXPECT_NE(msg.find(words), std::string::npos) << "message: " << msg; \
  } while (0)

TEST(TopoFile, Minimal) {
  const Graph g = parse("# a comment\n\nnodes 3\nundirected\n0 1  # first\n1 2\n2 0\n");
  EXPECT_EQ(g.size(), 3);
  EXPECT_FALSE(g.directed());
  EXPECT_EQ(g.edge_count(), 3u);
  EXPECT_FALSE(g.weighted());
  EXPECT_EQ(default_scheme(g), WeightScheme::kMetropolisHastings);
}

TEST(TopoFile, WeightsLabelsAndDerivedSelfWeight) {
  const Graph g = parse("nodes 2\nundirected\n0 1 0.25 class=ib\n");
  EXPECT_TRUE(g.weighted());
  EXPECT_EQ(g.out(0)[0].label, "ib");
  const Matrix w = mixing_matrix(g);
  EXPECT_DOUBLE_EQ(w(0, 1), 0.25);
  EXPECT_DOUBLE_EQ(w(0, 0), 0.75);
  EXPECT_NEAR(spectral_gap(w), 0.5, 1e-12);
}

TEST(TopoFile, DirectedPushSumColumns) {
  const Graph g = parse("nodes 3\ndirected\n0 1 0.5\n1 2 0.5\n2 0 0.5\nself 0 0.5\n");
  const Matrix w = mixing_matrix(g);
  EXPECT_LT(column_stochastic_error(w), 1e-15);
  EXPECT_DOUBLE_EQ(w(1, 0), 0.5);
  EXPECT_EQ(w(0, 1), 0.0);
}

TEST(TopoFile, Errors) {
  const std::string head = "nodes 4\nundirected\n";
  EXPECT_REFUSED(head + "0 1\n1 9\n", "t.topo:4: ", "unknown node 9");
  EXPECT_REFUSED(head + "0 1 -0.5\n", "t.topo:3: ", "negative weight");
  EXPECT_REFUSED(head + "0 1 abc\n", "t.topo:3: ", "not a number");
  EXPECT_REFUSED(head + "0 1 1.5\n", "t.topo:3: ", "above 1");
  EXPECT_REFUSED(head + "0 1\n1 2\n1 0\n", "t.topo:5: ", "duplicate edge 1 0 (first on line 3)");
  EXPECT_REFUSED(head + "0 1\n2 3\n", "t.topo:1: ", "not connected");
  EXPECT_REFUSED(head + "0 0\n", "t.topo:3: ", "self loop");
  EXPECT_REFUSED(head + "0 1\nfoo bar\n", "t.topo:4: ", "cannot read 'foo bar'");
  EXPECT_REFUSED("undirected\n0 1\n", "t.topo:2: ", "'nodes N' must come before");
  EXPECT_REFUSED("nodes 2\n0 1\n", "t.topo:2: ", "'directed' or 'undirected'");
  EXPECT_REFUSED("nodes two\n", "t.topo:1: ", "nodes N");
  EXPECT_REFUSED("# empty\n", "t.topo:1: ", "no 'nodes N' line");
  EXPECT_REFUSED(head + "0 1 0.5\n1 2\n2 3 0.5\n", "t.topo:4: ", "give every edge a weight or none");
  // Rows must sum to 1: node 1 gives 0.5 + 0.4 and keeps 0.2.
  EXPECT_REFUSED(head + "0 1 0.5\n1 2 0.4\n2 3 0.5\nself 1 0.2\n",
                 "t.topo:6: ", "weights of node 1 (self included) sum to 1.1");
  // Without a self weight, only sums above 1 are wrong (node 1: 0.6 + 0.6).
  EXPECT_REFUSED(head + "0 1 0.6\n1 2 0.6\n2 3 0.1\n", "t.topo:4: ", "sum to 1.2");
  // Within 1e-9 is fine.
  EXPECT_EQ(error_of("nodes 2\nundirected\n0 1 0.5\nself 0 0.5000000001\nself 1 0.5\n"), "");
  // Directed graphs are checked by column (what a node sends) and strong connectivity.
  EXPECT_REFUSED("nodes 2\ndirected\n0 1 0.5\n1 0 0.5\nself 1 0.7\n", "t.topo:5: ", "the weights node 1 sends");
  EXPECT_REFUSED("nodes 3\ndirected\n0 1\n1 2\n", "t.topo:1: ", "not strongly connected");
  // In a directed file 0 1 and 1 0 are different edges.
  EXPECT_EQ(error_of("nodes 2\ndirected\n0 1\n1 0\n"), "");
}

TEST(TopoFile, MissingFile) { EXPECT_THROW(read_topology_file("/nonexistent/x.topo"), TopologyError); }

// Callers that handle any text format's error catch ParseError and get the
// place apart from the reason.
TEST(TopoFile, ErrorsAreParseErrorsWithPathAndLine) {
  try {
    parse("nodes 3\nundirected\n0 1\nfoo bar\n");
    FAIL() << "parsed";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.path(), "t.topo");
    EXPECT_EQ(e.line(), 4);
    EXPECT_EQ(e.reason().rfind("cannot read 'foo bar'", 0), 0u) << e.reason();
  }
  try {
    read_topology_file("/nonexistent/x.topo");
    FAIL() << "read";
  } catch (const TopologyError& e) {
    EXPECT_EQ(e.line(), 0);
    EXPECT_STREQ(e.what(), "/nonexistent/x.topo: cannot open the topology file: No such file or directory");
  }
}

TEST(TopoFile, ShippedFiles) {
  const std::string dir = MURMUR_SOURCE_DIR "/topologies/";
  const Graph ring8 = read_topology_file(dir + "ring-8.topo");
  EXPECT_EQ(diameter(ring8), 4);
  EXPECT_NEAR(spectral_gap(mixing_matrix(ring8)), 1.0 - (1.0 / 3 + 2.0 / 3 * std::cos(3.14159265358979323846 / 4)),
              1e-9);
  const Graph cluster = read_topology_file(dir + "cluster-2x4.topo");
  EXPECT_EQ(cluster.size(), 8);
  EXPECT_TRUE(cluster.weighted());
  const Matrix w = mixing_matrix(cluster);
  EXPECT_LT(row_stochastic_error(w), 1e-12);
  EXPECT_TRUE(is_symmetric(w));
  const Graph exp16 = read_topology_file(dir + "exponential-16.topo");
  EXPECT_EQ(exp16.edge_count(), 56u);
  EXPECT_NEAR(spectral_gap(mixing_matrix(exp16)), 0.5, 1e-9);
  const Graph directed = read_topology_file(dir + "exponential-8-directed.topo");
  EXPECT_TRUE(directed.directed());
  EXPECT_LT(column_stochastic_error(mixing_matrix(directed)), 1e-12);
}

// A topology read from a file is named after it, and a file name may hold
// anything but '/' and NUL: murmur-topo --json must still print JSON that a
// parser reads back to the same name (the hand-written escaper it replaced
// dropped control characters).
TEST(TopologyReportJson, AnyNameRoundTripsThroughAJsonParser) {
  const std::string name = std::string("tab\there \"quoted\" back\\slash\nnew\x01\x1f ") +
                           "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x94\x80";
  TopologyReport report = analyse(StaticTopology(name, parse("nodes 3\nundirected\n0 1\n1 2 class=\"ib\n")), 0);
  std::ostringstream out;
  print_json(out, report);
  const auto json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json.at("name").get<std::string>(), name) << out.str();
  EXPECT_EQ(json.at("nodes"), 3);
  EXPECT_EQ(json.at("neighbours").at(1).at("out").at(1).at("class"), "\"ib");
  EXPECT_DOUBLE_EQ(json.at("spectral_gap").get<double>(), report.spectral_gap);
  EXPECT_EQ(json.at("diameter"), 2);
}

}  // namespace
}  // namespace murmur::gossip
