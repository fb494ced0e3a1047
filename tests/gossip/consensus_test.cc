// Multi-process consensus tests: 8 gossip_test_peer processes on loopback
// over the fabric (libfabric tcp), each averaging a seeded vector of random
// floats with one algorithm and no gradient; every rank checks itself against
// the exact mean it computes from the seeds, and this driver checks the
// printed results.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <csignal>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/local_job.h"

namespace murmur::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kPeers = 8;

bool exited_ok(const std::optional<int>& status) { return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0; }

using Result = std::map<std::string, double>;

// Runs the job and returns each rank's "result" fields.
std::vector<Result> run(std::vector<std::string> args, const std::string& backend = "libfabric",
                        const std::string& provider = "tcp", int peers = kPeers) {
  std::vector<std::string> all = {"--backend", backend, "--provider", provider};
  all.insert(all.end(), args.begin(), args.end());
  LocalJob job("tests/gossip/gossip_test_peer", peers, all);
  auto statuses = job.wait_all(120s);
  std::vector<Result> results(peers);
  for (int r = 0; r < peers; ++r) {
    EXPECT_TRUE(exited_ok(statuses[r])) << job.describe(r, statuses[r]);
    std::string out = job.output(r);
    auto at = out.find("result rank=");
    if (at == std::string::npos) {
      ADD_FAILURE() << "rank " << r << " printed no result:\n" << out;
      continue;
    }
    std::string line = out.substr(at, out.find('\n', at) - at);
    if (r == 0) std::cout << line << std::endl;  // for the log: error, bytes, rounds, wait
    std::regex kv("([a-z_]+)=([-+0-9.eEinfa]+)");
    for (std::sregex_iterator it(line.begin(), line.end(), kv), end; it != end; ++it)
      results[r][(*it)[1]] = std::stod((*it)[2]);
  }
  return results;
}

double max_of(const std::vector<Result>& rs, const std::string& key) {
  double m = 0;
  for (const auto& r : rs) m = std::max(m, r.count(key) ? r.at(key) : 1e300);
  return m;
}

// dpsgd: 300 rounds of Metropolis-Hastings gossip. The slowest graph, the
// 8-ring, has second eigenvalue 1/3 + 2/3 cos(2 pi / 8) = 0.805 under MH
// weights: 0.805^300 ~ 1e-28, far below float rounding (~1e-7 at |x| ~ 8).
class Dpsgd : public ::testing::TestWithParam<std::string> {};

TEST_P(Dpsgd, ReachesTheExactMean) {
  auto rs =
      run({"--algorithm", "dpsgd", "--topology", GetParam(), "--degree", "3", "--steps", "300", "--elements", "10000"});
  EXPECT_LT(max_of(rs, "max_error"), 1e-6);
  for (const auto& r : rs) EXPECT_GT(r.at("bytes_sent"), 0);
}

INSTANTIATE_TEST_SUITE_P(Loopback, Dpsgd, ::testing::Values("ring", "exponential", "random"),
                         [](const auto& info) { return info.param; });

// choco on the 8-ring (static; MH weights), within a stated number of rounds
// (measured on this setup: top-k 1% reaches 2.6e-4 after 1300 rounds and
// 7e-5 after 1600; sign 4.5e-4 after 2500). Relative error:
// max_r ||x_r - mean|| / max_r ||x_r(0) - mean||. Scaled sign is slow once the
// residual x - x_hat concentrates on few coordinates (its one scale is the
// mean |residual|), hence 1,000 elements and more rounds for it.
struct ChocoCase {
  std::string name, compressor, gamma, elements;
  int rounds;
};

// So that ctest and gtest name the case rather than dump its bytes.
void PrintTo(const ChocoCase& c, std::ostream* os) { *os << c.name; }

class Choco : public ::testing::TestWithParam<ChocoCase> {};

TEST_P(Choco, GetsWithinOnePermilleRelativeError) {
  const auto& c = GetParam();
  auto rs = run({"--algorithm", "choco", "--topology", "ring", "--compressor", c.compressor, "--gamma", c.gamma,
                 "--steps", std::to_string(c.rounds), "--elements", c.elements});
  EXPECT_LT(max_of(rs, "rel_error"), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Loopback, Choco,
                         ::testing::Values(ChocoCase{"Topk1pct", "topk:0.01", "0.04", "10000", 1500},
                                           ChocoCase{"Sign", "sign", "0.1", "1000", 3000}),
                         [](const auto& info) { return info.param.name; });

// sgp on the one-peer exponential graph (directed, time-varying): with shares
// 1/2 every period of log2(8) = 3 rounds is exact averaging; the push-sum
// weights sum to n.
TEST(Sgp, OnePeerExponentialReachesTheMeanAndConservesMass) {
  auto rs = run({"--algorithm", "sgp", "--topology", "one-peer-exponential", "--steps", "30", "--elements", "10000"});
  EXPECT_LT(max_of(rs, "max_error"), 1e-6);
  double mass = 0;
  for (const auto& r : rs) mass += r.at("weight");
  EXPECT_NEAR(mass, kPeers, 1e-9);
}

// sgp where the weights do move: on a star, push-sum shares are 1/8 at the
// hub and 1/2 at the leaves, so w drifts away from 1 while z = x / w still
// reaches the mean and the sum of w stays n (up to double rounding).
TEST(Sgp, StarWeightsMoveYetMassIsConserved) {
  auto rs = run({"--algorithm", "sgp", "--topology", "star", "--steps", "200", "--elements", "10000"});
  EXPECT_LT(max_of(rs, "max_error"), 1e-6);
  double mass = 0, spread = 0;
  for (const auto& r : rs) {
    mass += r.at("weight");
    spread = std::max(spread, std::abs(r.at("weight") - 1));
  }
  EXPECT_NEAR(mass, kPeers, 1e-9);
  EXPECT_GT(spread, 1e-2);
}

// adpsgd: "mutual" makes every pair of a hypercube pick each other at the same
// step (the case that deadlocks a lock-both-ends protocol); random picks on a
// ring too. Both finish and converge. Every step (H = 1) makes one exchange,
// also with a neighbour that has finished its steps (it serves until our BYE):
// rounds == steps on every rank, however the ranks' speeds differ under load.
TEST(Adpsgd, MutualPicksNeverDeadlockAndConverge) {
  auto rs = run({"--algorithm", "adpsgd", "--topology", "hypercube", "--pick", "mutual", "--steps", "200", "--elements",
                 "10000", "--timeout-s", "30"});
  EXPECT_LT(max_of(rs, "rel_error"), 1e-3);
  double crossings = 0;
  for (const auto& r : rs) {
    EXPECT_EQ(r.at("rounds"), 200);
    crossings += r.at("crossings");
  }
  // The simultaneous case did happen (and was resolved as one averaging).
  EXPECT_GT(crossings, 0);
}

TEST(Adpsgd, RandomPicksOnARingConverge) {
  auto rs = run(
      {"--algorithm", "adpsgd", "--topology", "ring", "--steps", "400", "--elements", "10000", "--timeout-s", "30"});
  EXPECT_LT(max_of(rs, "rel_error"), 1e-3);
  for (const auto& r : rs) EXPECT_EQ(r.at("rounds"), 400);
}

// allreduce: the exact sum, bitwise the same on every rank.
TEST(Allreduce, EqualsTheExactSum) {
  auto rs = run({"--algorithm", "allreduce", "--topology", "none", "--mode", "sum", "--sum", "--steps", "1",
                 "--elements", "10001"});
  // |x| < 1 per element, 7 float additions: rounding below 1e-6.
  EXPECT_LT(max_of(rs, "max_error"), 1e-4);
  for (const auto& r : rs) EXPECT_EQ(r.at("checksum"), rs[0].at("checksum"));
}

// topk-allreduce with error feedback, each rank adding a fixed update v_r to
// its model before each step: every rank holds the same model, and it has
// moved from the mean start by T * the mean update less what the residuals
// still hold: ||p (x_T - mean x_0) - T sum_r v_r|| <= sum_r ||e_r||.
TEST(TopkAllreduce, ErrorFeedbackAccountsForEverything) {
  auto rs = run({"--algorithm", "topk-allreduce", "--topology", "none", "--mode", "ef", "--compressor", "topk:0.05",
                 "--steps", "40", "--elements", "10000"});
  double residuals = 0;
  for (const auto& r : rs) residuals += r.at("residual");
  for (const auto& r : rs) {
    EXPECT_EQ(r.at("checksum"), rs[0].at("checksum"));
    EXPECT_LE(r.at("ef_gap"), residuals * (1 + 1e-3) + 1e-2);
    EXPECT_GT(r.at("residual"), 0);
  }
}

// local-sgd: each rank drifts by 0.01 (r + 1) per step; every 4th step all
// hold the exact mean, in between each its own closed-form value.
TEST(LocalSgd, AveragesExactlyEveryHSteps) {
  auto rs = run({"--algorithm", "local-sgd", "--topology", "none", "--mode", "drift", "--period", "4", "--steps", "12",
                 "--elements", "1000"});
  EXPECT_LT(max_of(rs, "max_error"), 1e-4);
  for (const auto& r : rs) EXPECT_EQ(r.at("rounds"), 3);
}

// The same algorithm code over the other backend (plain TCP through asio).
TEST(AsioBackend, DpsgdAndAdpsgdReachTheMean) {
  auto rs =
      run({"--algorithm", "dpsgd", "--topology", "ring", "--steps", "300", "--elements", "10000"}, "asio", "auto");
  EXPECT_LT(max_of(rs, "max_error"), 1e-6);
  rs = run({"--algorithm", "adpsgd", "--topology", "hypercube", "--pick", "mutual", "--steps", "200", "--elements",
            "10000", "--timeout-s", "30"},
           "asio", "auto");
  EXPECT_LT(max_of(rs, "rel_error"), 1e-3);
}

// SIGKILL one peer mid-run: its ring neighbours name it, every survivor exits
// with an error (never hangs) within the failure-detection time.
class Failure : public ::testing::TestWithParam<std::string> {};

TEST_P(Failure, KilledPeerSurfacesAsPeerErrorNamingIt) {
  const auto heartbeat_timeout = 3000ms;
  const std::string algorithm = GetParam();
  LocalJob job(
      "tests/gossip/gossip_test_peer", kPeers,
      {"--backend", "libfabric", "--provider", "tcp", "--heartbeat-ms", "500", "--algorithm", algorithm, "--topology",
       algorithm == "allreduce" ? "none" : "ring", "--steps", "100000000", "--elements", "1000", "--timeout-s", "20"},
      heartbeat_timeout);
  for (int r = 0; r < kPeers; ++r) ASSERT_TRUE(job.wait_for_output(r, "joined", 60s)) << job.output(r);
  // Not a wait: the kill usually lands mid-run rather than right after the
  // group is up; at any time after "joined" the survivors must name it.
  std::this_thread::sleep_for(200ms);
  const int victim = 3;
  job.kill(victim, SIGKILL);
  auto killed_at = std::chrono::steady_clock::now();
  for (int r = 0; r < kPeers; ++r) {
    if (r == victim) continue;
    auto status = job.wait(r, killed_at + heartbeat_timeout + 20s);
    ASSERT_TRUE(status.has_value()) << "rank " << r << " hung:\n" << job.output(r);
    EXPECT_FALSE(exited_ok(status)) << job.describe(r, status);
    EXPECT_NE(job.output(r).find("error: rank " + std::to_string(r) + ": "), std::string::npos) << job.output(r);
  }
  // The ring neighbours of the victim (for allreduce: its left and right).
  for (int r : {2, 4}) EXPECT_NE(job.output(r).find("peer rank 3 ("), std::string::npos) << job.output(r);
}

INSTANTIATE_TEST_SUITE_P(Loopback, Failure, ::testing::Values("dpsgd", "adpsgd", "allreduce"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace murmur::testing
