// The cluster file parser: defaults, presets and overrides, units, and the
// path:line of every refusal; ClusterSpec::slowdown.
#include "sim/cluster_spec.h"

#include <gtest/gtest.h>

#include <cmath>

#include <filesystem>
#include <fstream>

#include "sim/cost/network_preset.h"
#include "tests/support/scratch_dir.h"

namespace murmur::sim {
namespace {

namespace fs = std::filesystem;

// examples/sim in the source tree (MURMUR_SOURCE_DIR, not __FILE__, which is
// relative when ccache compiles with relative paths), from any build directory.
const fs::path kExamples = fs::path(MURMUR_SOURCE_DIR) / "examples" / "sim";

TEST(ClusterFile, ExampleLoads) {
  const ClusterSpec c = load_cluster_file((kExamples / "ib-32.cluster").string());
  const cost::NetworkPreset& ib = cost::network_preset("100gb-ib-rdma");
  EXPECT_EQ(c.gpus, 32);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.nodes(), 8);
  EXPECT_EQ(c.network, "custom");  // the intra-node line overrides the preset
  EXPECT_DOUBLE_EQ(c.inter_node.latency_s, ib.inter_node.latency_s);
  EXPECT_DOUBLE_EQ(c.inter_node.bandwidth_Bps, ib.inter_node.bandwidth_Bps);
  EXPECT_DOUBLE_EQ(c.intra_node.latency_s, ib.intra_node.latency_s);
  EXPECT_DOUBLE_EQ(c.intra_node.bandwidth_Bps, 25e9);
  ASSERT_EQ(c.stragglers.size(), 1u);
  EXPECT_DOUBLE_EQ(c.slowdown(5), 1.25);
  EXPECT_DOUBLE_EQ(c.slowdown(4), 1);
}

TEST(ClusterSpec, SlowdownIsOneUnlessAStraggler) {
  ClusterSpec c;
  c.gpus = 10;
  c.stragglers = {{3, 1.5}, {7, 2}};
  EXPECT_DOUBLE_EQ(c.slowdown(3), 1.5);
  EXPECT_DOUBLE_EQ(c.slowdown(7), 2);
  EXPECT_DOUBLE_EQ(c.slowdown(0), 1);
  EXPECT_EQ(c.nodes(), 3);
  EXPECT_EQ(c.node_of(9), 2);
}

// Loads `text` from a file in this process's scratch directory; `path`
// says where.
ClusterSpec load(const std::string& text, std::string* path = nullptr) {
  const std::string file = murmur::testing::scratch_path("test.cluster").string();
  std::ofstream(file) << text;
  if (path) *path = file;
  return load_cluster_file(file);
}

TEST(ClusterFile, DefaultsAreFourPerNodeOn10GbE) {
  const ClusterSpec c = load("# just a size\ngpus 6\n");
  const cost::NetworkPreset& tcp = cost::network_preset("10gbe-tcp");
  EXPECT_EQ(c.gpus, 6);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.network, "10gbe-tcp");
  EXPECT_DOUBLE_EQ(c.inter_node.bandwidth_Bps, tcp.inter_node.bandwidth_Bps);
  EXPECT_DOUBLE_EQ(c.intra_node.latency_s, tcp.intra_node.latency_s);
  EXPECT_TRUE(c.stragglers.empty());
}

TEST(ClusterFile, PresetKeepsItsName) {
  const ClusterSpec c = load("network 100gbe-tcp\ngpus 8\ngpus-per-node 2\n");
  EXPECT_EQ(c.network, "100gbe-tcp");
  EXPECT_EQ(c.nodes(), 4);
  EXPECT_DOUBLE_EQ(c.inter_node.latency_s, cost::network_preset("100gbe-tcp").inter_node.latency_s);
}

// Link lines win over the preset wherever they stand in the file.
TEST(ClusterFile, LinkLinesOverrideThePreset) {
  const ClusterSpec c = load(
      "inter-node latency=25us bandwidth=10Gbit/s\n"
      "network 100gb-ib-rdma\ngpus 16\n");
  EXPECT_EQ(c.network, "custom");
  EXPECT_DOUBLE_EQ(c.inter_node.latency_s, 25e-6);
  EXPECT_DOUBLE_EQ(c.inter_node.bandwidth_Bps, 1.25e9);
  EXPECT_DOUBLE_EQ(c.intra_node.bandwidth_Bps, cost::network_preset("100gb-ib-rdma").intra_node.bandwidth_Bps);
  // A busy latency defaults to the link's own.
  EXPECT_DOUBLE_EQ(c.inter_node.busy_latency(), 25e-6);
  const ClusterSpec busy = load("gpus 4\nintra-node latency=1ms busy-latency=7ms\n");
  EXPECT_DOUBLE_EQ(busy.intra_node.busy_latency(), 7e-3);
  EXPECT_DOUBLE_EQ(busy.intra_node.latency_s, 1e-3);
  // A busy latency alone keeps the preset (and its calibrated constants).
  const ClusterSpec concurrent = load("gpus 4\nintra-node latency=1ms concurrent-message=150us\n");
  EXPECT_DOUBLE_EQ(concurrent.intra_node.concurrent_message_s, 150e-6);
  EXPECT_DOUBLE_EQ(concurrent.inter_node.concurrent_message_s, 0);  // not given: overlap fully
  const ClusterSpec only_busy = load("gpus 4\nnetwork 100gbe-tcp\ninter-node busy-latency=1s\n");
  EXPECT_EQ(only_busy.network, "100gbe-tcp");
  EXPECT_DOUBLE_EQ(only_busy.inter_node.busy_latency(), 1);
  // Below a preset's latency it is refused, saying whose latency it is.
  std::string message;
  try {
    load("gpus 4\ninter-node busy-latency=0us\n");
  } catch (const ClusterError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(":2: inter-node busy-latency 0 us is below its latency "), std::string::npos) << message;
  EXPECT_NE(message.find("(network 10gbe-tcp's)"), std::string::npos) << message;
}

TEST(ClusterFile, LinkEpisodesSlowOnePairForAWhile) {
  const ClusterSpec c = load(
      "gpus 8\ngpus-per-node 1\n"
      "link-episode a=0 b=1 from=2s to=6s bandwidth=100Mbit/s\n"
      "link-episode a=3 b=4 from=500ms bandwidth=1Gbit/s latency=1ms\n");
  ASSERT_EQ(c.episodes.size(), 2U);
  EXPECT_EQ(c.episodes[0].a, 0);
  EXPECT_EQ(c.episodes[0].b, 1);
  EXPECT_DOUBLE_EQ(c.episodes[0].from_s, 2);
  EXPECT_DOUBLE_EQ(c.episodes[0].to_s, 6);
  EXPECT_DOUBLE_EQ(c.episodes[0].link.bandwidth_Bps, 12.5e6);
  EXPECT_DOUBLE_EQ(c.episodes[0].link.latency_s, c.inter_node.latency_s);  // kept from the link it replaces
  EXPECT_TRUE(std::isinf(c.episodes[1].to_s));
  EXPECT_DOUBLE_EQ(c.episodes[1].link.latency_s, 1e-3);
}

// Four murmur peers on a host of two cores: each computes at half speed.
TEST(ClusterFile, HostCoresAndStack) {
  const ClusterSpec c = load("gpus 4\ngpus-per-node 1\nstack murmur\nhost peers=4 cores=2\n");
  EXPECT_EQ(c.stack, Stack::kMurmur);
  EXPECT_EQ(c.peers_per_host, 4);
  EXPECT_EQ(c.cores_per_host, 2);
  EXPECT_DOUBLE_EQ(c.host_contention(), 2);
  EXPECT_DOUBLE_EQ(load("gpus 2\nhost peers=4 cores=1\n").host_contention(), 2);  // only two peers exist
  EXPECT_DOUBLE_EQ(load("gpus 4\nhost peers=2 cores=8\n").host_contention(), 1);
  const ClusterSpec gpus = load("gpus 4\n");
  EXPECT_EQ(gpus.stack, Stack::kPaper);
  EXPECT_DOUBLE_EQ(gpus.host_contention(), 1);
}

TEST(ClusterFile, UnitsAreDecimal) {
  const std::pair<const char*, double> latencies[] = {{"2s", 2},         {"1.5ms", 1.5e-3}, {"25us", 25e-6},
                                                      {"800ns", 800e-9}, {"0s", 0},         {"1e-6s", 1e-6}};
  for (const auto& [text, seconds] : latencies) {
    const ClusterSpec c = load(std::string("gpus 1\nintra-node latency=") + text + "\n");
    EXPECT_DOUBLE_EQ(c.intra_node.latency_s, seconds) << text;
  }
  const std::pair<const char*, double> bandwidths[] = {{"8bit/s", 1},         {"8Kbit/s", 1e3},    {"8Mbit/s", 1e6},
                                                       {"100Gbit/s", 12.5e9}, {"3B/s", 3},         {"3KB/s", 3e3},
                                                       {"3MB/s", 3e6},        {"12.5GB/s", 12.5e9}};
  for (const auto& [text, bytes_per_s] : bandwidths) {
    const ClusterSpec c = load(std::string("gpus 1\ninter-node bandwidth=") + text + "\n");
    EXPECT_DOUBLE_EQ(c.inter_node.bandwidth_Bps, bytes_per_s) << text;
  }
}

// A malformed file, the line its error names (the last line for something
// missing) and the reason after "path:line: ".
struct BadCluster {
  std::string text;
  int line;
  std::string reason;
};

const std::string kLatency = "is not a number >= 0 with a unit (ms, us, ns, s), e.g. 25us";
const std::string kBandwidth =
    "is not a number > 0 with a unit (Kbit/s, Mbit/s, Gbit/s, bit/s, KB/s, MB/s, GB/s, B/s), "
    "e.g. 10Gbit/s";

const BadCluster kBadClusters[] = {
    {"gpus 4\nnodes 2\n", 2,
     "unknown keyword 'nodes'; expected gpus, gpus-per-node, network, inter-node, intra-node, "
     "straggler, link-episode, host or stack"},
    {"gpus 4\nhost peers=4\n", 2, "no cores=; expected 'host peers=P cores=C'"},
    {"gpus 4\nhost peers=4 cores=0\n", 2, "host cores '0' is not a whole number from 1 to 1048576"},
    {"gpus 4\nhost peers=4 cores=2\nhost peers=2 cores=2\n", 3, "'host' given twice (first on line 2)"},
    {"gpus 4\nstack horovod\n", 2, "unknown stack 'horovod' (known: paper, murmur)"},
    {"gpus 8\nlink-episode a=0 b=1 from=2s\n", 2,
     "no bandwidth=; expected 'link-episode a=R b=R from=T [to=T] bandwidth=B [latency=T]'"},
    {"gpus 8\nlink-episode a=0 b=0 from=2s bandwidth=1MB/s\n", 2,
     "link-episode joins rank 0 to itself; a= and b= must differ"},
    {"gpus 8\nlink-episode a=0 b=1 from=6s to=2s bandwidth=1MB/s\n", 2,
     "link-episode ends (to=) before it starts (from=)"},
    {"gpus 8\nlink-episode a=0 b=1 from=soon bandwidth=1MB/s\n", 2,
     "from 'soon' is not a time >= 0 with a unit (ms, us, ns, s), e.g. 2s"},
    {"link-episode a=0 b=9 from=1s bandwidth=1MB/s\ngpus 8\n", 1,
     "link-episode joins rank 9 but 'gpus 8' has ranks 0 to 7"},
    {"gpus\n", 1, "missing value; expected 'gpus N'"},
    {"gpus 4 8\n", 1, "too many values; expected 'gpus N'"},
    {"gpus 0\n", 1, "gpus '0' is not a whole number from 1 to 1048576"},
    {"gpus 8x\n", 1, "gpus '8x' is not a whole number from 1 to 1048576"},
    {"gpus 8\ngpus-per-node 0\n", 2, "gpus-per-node '0' is not a whole number from 1 to 1048576"},
    {"gpus 8\n# again\ngpus 16\n", 3, "'gpus' given twice (first on line 1)"},
    {"network 10gbe-tcp\nnetwork 10gbe-tcp\n", 2, "'network' given twice (first on line 1)"},
    {"gpus 8\nnetwork 40gbe\n", 2, "unknown network '40gbe' (known: 10gbe-tcp, 100gb-ib-rdma, 100gbe-tcp)"},
    {"gpus 8\ninter-node latency=1us\ninter-node bandwidth=1GB/s\n", 3, "'inter-node' given twice (first on line 2)"},
    {"intra-node\n", 1,
     "missing value; expected 'intra-node latency=T bandwidth=B [busy-latency=T] [concurrent-message=T]'"},
    {"gpus 4\ninter-node busy-latency=soon\n", 2,
     "busy-latency 'soon' is not a number >= 0 with a unit (ms, us, ns, s), e.g. 2ms"},
    {"gpus 4\ninter-node concurrent-message=soon\n", 2,
     "concurrent-message 'soon' is not a number >= 0 with a unit (ms, us, ns, s), e.g. 50us"},
    {"gpus 4\ninter-node concurrent-message=30us latency=25us\n", 2,
     "inter-node concurrent-message 30 us is above its latency 25 us (given on the line); a message posted beside "
     "others costs no more than one alone"},
    {"gpus 4\ninter-node busy-latency=10us latency=25us\n", 2,
     "inter-node busy-latency 10 us is below its latency 25 us (given on the line); a busy host only adds to a "
     "message's cost"},
    {"inter-node delay=5us\n", 1,
     "unknown key 'delay=5us' in 'inter-node'; expected 'inter-node latency=T bandwidth=B [busy-latency=T] "
     "[concurrent-message=T]'"},
    {"inter-node latency=5us latency=6us\n", 1, "'latency=' given twice"},
    {"inter-node latency=\n", 1, "missing value after 'latency='"},
    {"inter-node latency=25\n", 1, "latency '25' " + kLatency},
    {"inter-node latency=2x5us\n", 1, "latency '2x5us' " + kLatency},
    {"inter-node latency=-1us\n", 1, "latency '-1us' " + kLatency},
    {"inter-node latency=nanus\n", 1, "latency 'nanus' " + kLatency},
    {"gpus 2\nintra-node bandwidth=10gbit/s\n", 2, "bandwidth '10gbit/s' " + kBandwidth},
    {"intra-node bandwidth=0GB/s\n", 1, "bandwidth '0GB/s' " + kBandwidth},
    {"intra-node bandwidth=infGB/s\n", 1, "bandwidth 'infGB/s' " + kBandwidth},
    // The rank is checked against gpus after the whole file, at its own line.
    {"straggler rank=3 slowdown=1.5\ngpus 3\n", 1, "straggler rank 3 is out of range: 'gpus 3' has ranks 0 to 2"},
    {"gpus 8\nstraggler rank=-1 slowdown=2\n", 2,
     "straggler rank '-1' is not a whole number >= 0 (ranks count from 0)"},
    {"gpus 8\nstraggler rank=1 slowdown=0.5\n", 2,
     "slowdown '0.5' is not a number >= 1 (the rank's compute time multiplier)"},
    {"gpus 8\nstraggler rank=1\n", 2, "no slowdown=; expected 'straggler rank=R slowdown=S'"},
    {"gpus 8\nstraggler rank=1 slowdown=2\nstraggler slowdown=3 rank=1\n", 3,
     "straggler rank 1 given twice (first on line 2)"},
    {"network 10gbe-tcp\n\n", 2, "no 'gpus N' line; say how many GPUs to simulate"},
};

class ClusterFileRefuses : public ::testing::TestWithParam<BadCluster> {};

TEST_P(ClusterFileRefuses, AtTheLineAtFault) {
  std::string path, message = "no error";
  try {
    load(GetParam().text, &path);
  } catch (const ClusterError& e) {
    message = e.what();
  }
  EXPECT_EQ(message, path + ":" + std::to_string(GetParam().line) + ": " + GetParam().reason);
}

INSTANTIATE_TEST_SUITE_P(BadFiles, ClusterFileRefuses, ::testing::ValuesIn(kBadClusters));

TEST(ClusterFileErrors, UnreadableFileNamesPathAndReason) {
  const std::string missing = murmur::testing::scratch_path("no-such.cluster").string();
  try {
    load_cluster_file(missing);
    FAIL() << "no error";
  } catch (const ClusterError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot read cluster file: No such file or directory");
  }
}

}  // namespace
}  // namespace murmur::sim
