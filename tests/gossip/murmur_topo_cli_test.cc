// Runs the murmur-topo binary and reads what it prints.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>

namespace {

const std::string kTool = MURMUR_BIN_DIR "/src/gossip/topology/murmur-topo";

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr
};

Result run(const std::string& args) {
  Result r;
  FILE* p = popen((kTool + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  for (std::size_t got; (got = fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), got);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

double printed_gap(const std::string& out) {
  const std::string key = "spectral gap: ";
  const auto at = out.find(key);
  if (at == std::string::npos) return NAN;
  return std::stod(out.substr(at + key.size()));
}

TEST(MurmurTopo, RingGapMatchesClosedForm) {
  for (int n : {8, 10, 25}) {
    const Result r = run("ring -n " + std::to_string(n));
    ASSERT_EQ(r.status, 0) << r.out;
    double lambda2 = 0.0;
    for (int k = 1; k < n; ++k) {
      lambda2 = std::max(lambda2, std::abs(1.0 / 3 + 2.0 / 3 * std::cos(2 * std::numbers::pi * k / n)));
    }
    EXPECT_NEAR(printed_gap(r.out), 1.0 - lambda2, 1e-9) << r.out;
    EXPECT_NE(r.out.find("diameter: " + std::to_string(n / 2)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("node 0: self 0.333333; 1 0.333333, " + std::to_string(n - 1) + " 0.333333"),
              std::string::npos)
        << r.out;
  }
}

TEST(MurmurTopo, ExponentialGapMatchesDft) {
  for (int n : {16, 12}) {
    const Result r = run("exponential -n " + std::to_string(n));
    ASSERT_EQ(r.status, 0) << r.out;
    // Offsets +-2^k; all nodes have the same degree d, weights 1/(d+1).
    std::array<bool, 64> offset{};
    for (int hop = 1; hop < n; hop *= 2) offset[hop] = offset[n - hop] = true;
    const int d = static_cast<int>(std::count(offset.begin(), offset.begin() + n, true));
    double lambda2 = 0.0;
    for (int k = 1; k < n; ++k) {
      double v = 1.0;
      for (int s = 1; s < n; ++s) {
        if (offset[s]) v += std::cos(2 * std::numbers::pi * k * s / n);
      }
      lambda2 = std::max(lambda2, std::abs(v / (d + 1)));
    }
    EXPECT_NEAR(printed_gap(r.out), 1.0 - lambda2, 1e-9) << r.out;
  }
}

TEST(MurmurTopo, FilesDotAndJson) {
  const std::string dot = testing::TempDir() + "/murmur_topo_test.dot";
  std::remove(dot.c_str());
  const Result r = run("random -n 32 --degree 4 --seed 7 --dot " + dot);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("degree: min 4, max 4"), std::string::npos) << r.out;
  FILE* f = std::fopen(dot.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  const Result json = run("one-peer-exponential -n 16 --round 3 --json");
  ASSERT_EQ(json.status, 0) << json.out;
  EXPECT_NE(json.out.find("\"time_varying\": true"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"round\": 3"), std::string::npos) << json.out;
  const Result file = run(MURMUR_SOURCE_DIR "/topologies/cluster-2x4.topo");
  ASSERT_EQ(file.status, 0) << file.out;
  EXPECT_NE(file.out.find("weights: given"), std::string::npos) << file.out;
}

TEST(MurmurTopo, UsageErrorsExitTwo) {
  for (const char* args : {"mesh -n 8", "ring --frobnicate", "hypercube -n 12", "random -n 5 -d 3"}) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("murmur-topo: ", 0), 0u) << r.out;
  }
  const Result help = run("--help");
  EXPECT_EQ(help.status, 0);
  for (const char* flag :
       {"--nodes", "--probability", "--degree", "--seed", "--rows", "--cols", "--round", "--dot", "--json"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
