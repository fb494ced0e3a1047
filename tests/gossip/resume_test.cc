// Resuming an algorithm from its saved state, in process: N asio transports,
// T steps, flush, every rank's parameters and save_state(); everything
// destroyed (transports included) and rebuilt, load_state(), T more steps.
// The parameters must be bitwise those of 2T uninterrupted steps that also
// flush at step T (with overlap, flush folds the round in flight, so the
// uninterrupted run must fold it at the same step to be comparable).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/transport_options.h"
#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/fabric_communicator.h"
#include "gossip/algorithm/state_blob.h"
#include "gossip/schedule/controller.h"
#include "gossip/topology/factory.h"
#include "tests/gossip/consensus_run.h"

namespace murmur::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kRanks = 4;
constexpr std::size_t kElements = 3000;

struct Cluster {
  std::vector<std::unique_ptr<fabric::Transport>> transports;
  std::vector<std::unique_ptr<gossip::FabricCommunicator>> comms;
};

Cluster make_cluster(int size) {
  Cluster c;
  std::vector<fabric::PeerInfo> peers;
  for (int r = 0; r < size; ++r) {
    fabric::TransportOptions o;
    o.backend = "asio";
    o.peers_on_this_host = true;
    o.rank = r;
    o.size = size;
    o.connect_timeout = 20s;
    c.transports.push_back(fabric::make_transport(o));
    peers.push_back(fabric::PeerInfo{r, "host" + std::to_string(r), c.transports.back()->address()});
  }
  std::vector<std::future<void>> connects;
  for (auto& t : c.transports) connects.push_back(std::async(std::launch::async, [&t, &peers] { t->connect(peers); }));
  for (auto& f : connects) f.get();
  for (auto& t : c.transports) c.comms.push_back(std::make_unique<gossip::FabricCommunicator>(*t, peers));
  return c;
}

struct Case {
  std::string algorithm;
  std::string topology;  // generator; "complete" for the centralized ones (ignored)
  std::string compressor = "none";
  bool overlap = false;
  int period = 1;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.algorithm + "_" + info.param.topology + (info.param.overlap ? "_overlap" : "") + "_H" +
                  std::to_string(info.param.period);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

struct RankState {
  std::vector<float> x;
  std::string state;
};

// A local step that depends on x (a pull towards a per-rank target), so that
// any difference in what the algorithm folds in would show.
void local_step(std::vector<float>& x, const std::vector<float>& target) {
  for (std::size_t i = 0; i < x.size(); ++i) x[i] -= 0.05f * (x[i] - target[i]);
}

// Runs `steps` steps on every rank from `from` (state loaded when not
// empty), flushes, and returns every rank's parameters and saved state.
std::vector<RankState> run(const Case& c, const std::vector<RankState>& from, int steps) {
  Cluster cluster = make_cluster(kRanks);
  auto topology = gossip::make_topology({.kind = c.topology, .nodes = kRanks});
  std::vector<std::future<RankState>> futures;
  for (int r = 0; r < kRanks; ++r) {
    futures.push_back(std::async(std::launch::async, [&, r] {
      gossip::AlgorithmOptions o;
      o.compressor = c.compressor;
      o.gamma = 0.5;
      o.overlap = c.overlap;
      o.period = c.period;
      auto algorithm = gossip::make_algorithm(c.algorithm, o, *cluster.comms[r], topology.get());
      RankState s = from[r];
      if (!s.state.empty()) algorithm->load_state(s.state);
      const auto target = initial_vector(99, r, kElements);
      for (int t = 0; t < steps; ++t) {
        local_step(s.x, target);
        algorithm->step(s.x);
      }
      algorithm->flush(s.x);
      s.state = algorithm->save_state();
      algorithm->finish(s.x);
      return s;
    }));
  }
  std::vector<RankState> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

std::vector<RankState> initial() {
  std::vector<RankState> s(kRanks);
  for (int r = 0; r < kRanks; ++r) s[r].x = initial_vector(7, r, kElements);
  return s;
}

class ResumeTest : public ::testing::TestWithParam<Case> {};

TEST_P(ResumeTest, ContinuesBitwiseAsAnUninterruptedRunFlushedAtTheSameStep) {
  const Case& c = GetParam();
  constexpr int kSteps = 15;  // not a multiple of the periods below: the position in the period must carry over
  // Uninterrupted: the same process keeps its algorithm; only the flush at
  // step T is shared with the resumed run.
  std::vector<RankState> straight(kRanks);
  {
    Cluster cluster = make_cluster(kRanks);
    auto topology = gossip::make_topology({.kind = c.topology, .nodes = kRanks});
    std::vector<std::future<std::vector<float>>> futures;
    for (int r = 0; r < kRanks; ++r) {
      futures.push_back(std::async(std::launch::async, [&, r] {
        gossip::AlgorithmOptions o;
        o.compressor = c.compressor;
        o.gamma = 0.5;
        o.overlap = c.overlap;
        o.period = c.period;
        auto algorithm = gossip::make_algorithm(c.algorithm, o, *cluster.comms[r], topology.get());
        auto x = initial_vector(7, r, kElements);
        const auto target = initial_vector(99, r, kElements);
        for (int t = 0; t < 2 * kSteps; ++t) {
          local_step(x, target);
          algorithm->step(x);
          if (t + 1 == kSteps) algorithm->flush(x);
        }
        algorithm->flush(x);
        algorithm->finish(x);
        return x;
      }));
    }
    for (int r = 0; r < kRanks; ++r) straight[r].x = futures[r].get();
  }
  const auto halfway = run(c, initial(), kSteps);
  for (const auto& s : halfway) ASSERT_FALSE(s.state.empty()) << c.algorithm << " saved no state";
  const auto resumed = run(c, halfway, kSteps);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(resumed[r].x.size(), straight[r].x.size());
    EXPECT_EQ(std::memcmp(resumed[r].x.data(), straight[r].x.data(), kElements * sizeof(float)), 0)
        << "rank " << r << ": x[0] resumed " << resumed[r].x[0] << ", uninterrupted " << straight[r].x[0];
  }
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, ResumeTest,
    ::testing::Values(Case{"dpsgd", "ring"}, Case{"dpsgd", "one-peer-exponential", "none", true, 2},
                      Case{"choco", "ring", "topk:0.1"}, Case{"choco", "ring", "topk:0.1", true, 2},
                      Case{"sgp", "one-peer-exponential"}, Case{"sgp", "one-peer-exponential", "none", true, 1},
                      Case{"topk-allreduce", "complete", "topk:0.1"},
                      Case{"topk-allreduce", "complete", "topk:0.1", false, 3}),
    case_name);

// The test has power: without the saved state, choco's resumed run differs.
TEST(ResumeState, ChocoWithoutItsStateDoesNotContinueTheSame) {
  const Case c{"choco", "ring", "topk:0.1"};
  auto halfway = run(c, initial(), 10);
  const auto with_state = run(c, halfway, 10);
  for (auto& s : halfway) s.state.clear();
  const auto without = run(c, halfway, 10);
  EXPECT_NE(std::memcmp(with_state[0].x.data(), without[0].x.data(), kElements * sizeof(float)), 0);
}

// What a load must refuse, with the reason in the message.
TEST(ResumeState, RefusesAnotherAlgorithmsStateATruncatedOneAndAnotherSize) {
  const std::string saved = run(Case{"choco", "ring", "topk:0.1"}, initial(), 3)[0].state;
  EXPECT_EQ(gossip::read_state_header(saved).name, "choco");
  EXPECT_EQ(gossip::read_state_header(saved).elements, kElements);
  // Algorithms are made, never stepped: loading needs no peer.
  Cluster cluster = make_cluster(2);
  auto topology = gossip::make_topology({.kind = "ring", .nodes = 2});
  gossip::AlgorithmOptions o;
  o.compressor = "topk:0.1";
  o.overlap = false;
  auto expect_refused = [&](const std::string& algorithm, const std::string& blob, const std::string& needle) {
    auto a = gossip::make_algorithm(algorithm, o, *cluster.comms[0], topology.get());
    try {
      a->load_state(blob);
      FAIL() << algorithm << " loaded " << blob.size() << " bytes: expected '" << needle << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_refused("dpsgd", saved, "the state of 'choco'");
  expect_refused("adpsgd", saved, "keeps no state");
  for (std::size_t cut = 0; cut < saved.size(); cut += 97) expect_refused("choco", saved.substr(0, cut), "choco");
  expect_refused("choco", saved.substr(0, saved.size() - 1), "truncated");
  expect_refused("choco", saved + "x", "left over");
  std::string bad_magic = saved;
  bad_magic[0] = 'X';
  expect_refused("choco", bad_magic, "bad magic");
  // Another parameter count: refused at the first step, before any message.
  auto other = gossip::make_algorithm("choco", o, *cluster.comms[0], topology.get());
  other->load_state(saved);
  std::vector<float> y(kElements + 1, 1.0f);
  try {
    other->step(y);
    FAIL() << "stepped a tensor of another size";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("3000 parameters"), std::string::npos) << e.what();
  }
}

// The scheduler's state: link estimators fed by real transfers, the compute
// estimator and the decisions, saved, loaded into a fresh controller and
// saved again, byte for byte; a blob that does not fit changes nothing.
TEST(ResumeState, ScheduleControllerStateRoundTripsAndRefusesWhatDoesNotFit) {
  Cluster cluster = make_cluster(2);
  gossip::schedule::ScheduleConfig config;
  config.bounds.max_period = 1;  // each rank agrees with itself: the period must not move
  std::vector<std::future<std::string>> futures;
  for (int r = 0; r < 2; ++r) {
    futures.push_back(std::async(std::launch::async, [&, r] {
      gossip::AlgorithmOptions o;
      o.channel = 3;
      auto algorithm = gossip::make_algorithm("allreduce", o, *cluster.comms[r], nullptr);
      auto self = [](const gossip::schedule::ScheduleProposal& mine) {
        return std::vector<gossip::schedule::ScheduleProposal>{mine};
      };
      std::vector<float> x(5000, static_cast<float>(r));
      std::string saved;
      {
        gossip::schedule::ScheduleController c(config, *algorithm, x.size(), 3, self, {});
        for (int t = 0; t < 12; ++t) {
          algorithm->step(x);
          c.on_step(0.001 * (t + 1));
        }
        saved = c.save_state();
      }
      algorithm->finish(x);
      return saved;
    }));
  }
  const std::string saved = futures[0].get();
  futures[1].get();
  EXPECT_EQ(gossip::read_state_header(saved).name, "schedule");

  Cluster lone = make_cluster(2);
  gossip::AlgorithmOptions o;
  auto algorithm = gossip::make_algorithm("allreduce", o, *lone.comms[0], nullptr);
  auto self = [](const gossip::schedule::ScheduleProposal& mine) {
    return std::vector<gossip::schedule::ScheduleProposal>{mine};
  };
  {
    gossip::schedule::ScheduleController c(config, *algorithm, 5000, 3, self, {});
    c.load_state(saved);
    EXPECT_EQ(c.save_state(), saved);
    ASSERT_TRUE(c.last_decision().has_value());
  }
  gossip::schedule::ScheduleController fresh(config, *algorithm, 5000, 3, self, {});
  const std::string before = fresh.save_state();
  auto expect_refused = [&](const std::string& blob, const std::string& needle) {
    try {
      fresh.load_state(blob);
      FAIL() << "loaded " << blob.size() << " bytes: expected '" << needle << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_EQ(fresh.save_state(), before) << "a refused blob changed the controller";
  };
  for (std::size_t cut = 0; cut < saved.size(); cut += 53) expect_refused(saved.substr(0, cut), "schedule");
  expect_refused(saved.substr(0, saved.size() - 1), "bytes left");
  gossip::schedule::ScheduleController other_size(config, *algorithm, 4999, 3, self, {});
  EXPECT_THROW(other_size.load_state(saved), std::invalid_argument);
  gossip::schedule::ScheduleConfig narrower = config;
  narrower.bounds.min_period = 2;  // the saved period 1 is outside
  narrower.bounds.max_period = 4;
  gossip::schedule::ScheduleController other_bounds(narrower, *algorithm, 5000, 3, self, {});
  EXPECT_THROW(other_bounds.load_state(saved), std::invalid_argument);
}

}  // namespace
}  // namespace murmur::testing
