// Algorithms across membership views, in process: N asio transports, one
// algorithm and one ViewGate per rank, a rank killed mid-run (its transport
// closed, so the others' links to it fail as they would for a dead process),
// the view without it proposed to the survivors. The agreement runs over an
// in-memory board with the semantics of the rendezvous store (values
// persist; every member sees the same reports).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fabric/errors.h"
#include "fabric/transport_options.h"
#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/fabric_communicator.h"
#include "gossip/algorithm/view_gate.h"
#include "gossip/topology/factory.h"
#include "tests/gossip/consensus_run.h"
#include "tests/support/wait.h"

namespace murmur::testing {
namespace {

using namespace std::chrono_literals;
using gossip::View;
using gossip::ViewChange;
using gossip::ViewGate;

// The reports of every agreement, as the rendezvous store keeps them.
struct Board {
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::pair<std::uint64_t, int>, std::uint64_t> reports;  // (generation, member) -> report

  ViewGate::Agree agree_for(int member) {
    return [this, member](const View& v, std::uint64_t report,
                          const std::function<bool()>& abandon) -> std::optional<std::vector<std::uint64_t>> {
      std::unique_lock lock(mutex);
      reports[{v.generation, member}] = report;
      cv.notify_all();
      for (;;) {
        std::vector<std::uint64_t> all;
        for (int m : v.members) {
          auto it = reports.find({v.generation, m});
          if (it == reports.end()) break;
          all.push_back(it->second);
        }
        if (all.size() == v.members.size()) return all;
        if (abandon()) return std::nullopt;
        cv.wait_for(lock, 20ms);
      }
    };
  }
};

// The graph of a view, in rank space of `member_space` ranks: the job's
// generator regenerated on the live members.
std::shared_ptr<const gossip::Topology> graph_of(const std::string& kind, const View& view, int member_space) {
  if (kind == "none") return nullptr;
  std::shared_ptr<const gossip::Topology> positions = gossip::make_topology({.kind = kind, .nodes = view.size()});
  return std::make_shared<gossip::MemberTopology>(positions, view.members, member_space);
}

// `member_space` is read at each change (a join grows it); `exchange`, if
// set, is the change's exchange_params (a join's sponsor and joiner).
ViewGate::Prepare prepare_for(const std::string& kind, std::function<int()> member_space,
                              std::function<void(std::span<float>, std::uint64_t)> exchange = {}) {
  return [kind, member_space, exchange](const View& from, const View& to) {
    ViewChange change;
    change.view = to;
    change.topology = graph_of(kind, to, member_space());
    for (int m : from.members)
      if (!to.contains(m)) change.lost.push_back(m);
    for (int m : to.members)
      if (!from.contains(m)) change.joined.push_back(m);
    if (!change.joined.empty()) change.exchange_params = exchange;
    return change;
  };
}

struct Rank {
  std::unique_ptr<fabric::Transport> transport;
  std::unique_ptr<gossip::FabricCommunicator> comm;
  std::unique_ptr<ViewGate> gate;
  std::unique_ptr<gossip::Algorithm> algorithm;
  std::vector<float> x;
};

std::string address_of(const Rank& rank) { return rank.transport->address(); }

struct Case {
  std::string algorithm;
  std::string topology;  // generator, or "none"
  std::string compressor = "none";
  double gamma = 1.0;
  int steps = 300;
  double tolerance = 1e-4;  // max deviation of a survivor from the survivors' mean, relative
};

class ViewChangeTest : public ::testing::TestWithParam<Case> {};

std::vector<std::unique_ptr<Rank>> make_ranks(int size, const Case& c, Board& board,
                                              std::shared_ptr<const gossip::Topology> topology) {
  std::vector<std::unique_ptr<Rank>> ranks;
  std::vector<fabric::PeerInfo> peers;
  for (int r = 0; r < size; ++r) {
    fabric::TransportOptions o;
    o.backend = "asio";
    o.peers_on_this_host = true;
    o.rank = r;
    o.size = size;
    o.connect_timeout = 20s;
    auto rank = std::make_unique<Rank>();
    rank->transport = fabric::make_transport(o);
    peers.push_back(fabric::PeerInfo{r, "host" + std::to_string(r), rank->transport->address()});
    ranks.push_back(std::move(rank));
  }
  std::vector<std::future<void>> connects;
  for (auto& r : ranks)
    connects.push_back(std::async(std::launch::async, [&r, &peers] { r->transport->connect(peers); }));
  for (auto& f : connects) f.get();
  View initial{0, {}};
  for (int r = 0; r < size; ++r) initial.members.push_back(r);
  for (int r = 0; r < size; ++r) {
    auto& rank = *ranks[r];
    rank.comm = std::make_unique<gossip::FabricCommunicator>(*rank.transport, peers);
    rank.gate = std::make_unique<ViewGate>(initial, r, board.agree_for(r),
                                           prepare_for(c.topology, [&rank] { return rank.transport->size(); }));
    gossip::AlgorithmOptions o;
    o.compressor = c.compressor;
    o.gamma = c.gamma;
    o.timeout_s = 30;
    o.tolerate_lost_peers = true;
    rank.algorithm = gossip::make_algorithm(c.algorithm, o, *rank.comm, topology.get());
    rank.algorithm->set_views(rank.gate.get());
    rank.x = initial_vector(11, r, 200);
  }
  return ranks;
}

// The victim dies: every link to it fails (closing its transport), and the
// membership service's view without it (generation 1) reaches the others.
void kill_and_propose_survivors(std::vector<std::unique_ptr<Rank>>& ranks, int victim_rank) {
  const int size = static_cast<int>(ranks.size());
  auto& victim = *ranks[victim_rank];
  const std::string why = "the test killed rank " + std::to_string(victim_rank);
  for (int p = 0; p < size; ++p)
    if (p != victim_rank) victim.transport->fail_peer(p, std::make_exception_ptr(fabric::PeerError(p, "host", why)));
  victim.algorithm.reset();
  victim.gate.reset();
  victim.transport.reset();
  View survivors{1, {}};
  for (int r = 0; r < size; ++r)
    if (r != victim_rank) survivors.members.push_back(r);
  for (int r = 0; r < size; ++r)
    if (r != victim_rank) ranks[r]->gate->propose(survivors, why);
}

// Runs `steps` calls of `step(rank)` on every rank in its own thread,
// the victim's only `kill_at`; once the victim stopped, kills it and
// proposes the view without it; returns when the survivors finished.
void run_and_kill(std::vector<std::unique_ptr<Rank>>& ranks, int victim_rank, int kill_at, int steps,
                  const std::function<void(int rank)>& step) {
  std::atomic<bool> victim_stopped{false}, proposed{false};
  std::vector<std::future<void>> runs;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    runs.push_back(std::async(std::launch::async, [&, r] {
      for (int t = 0; t < (r == victim_rank ? kill_at : steps); ++t) {
        // A survivor's rounds stop waiting for the victim once its links
        // failed (adpsgd has no rounds to hold anyone back): without this
        // the survivors could finish before the view reaches them.
        if (t == 2 * steps / 3) wait_for([&] { return proposed.load(); }, 60s);
        step(r);
      }
      if (r == victim_rank) {
        victim_stopped = true;
        return;
      }
      ranks[r]->algorithm->finish(ranks[r]->x);
    }));
  }
  EXPECT_TRUE(wait_for([&] { return victim_stopped.load(); }, 60s)) << "the victim never stopped";
  kill_and_propose_survivors(ranks, victim_rank);
  proposed = true;
  for (auto& run : runs) run.get();
}

// Each vector's largest deviation from their mean, relative to the mean's
// largest value (at least 1).
std::vector<double> relative_deviations(const std::vector<const std::vector<float>*>& vectors) {
  std::vector<double> mean(vectors.front()->size(), 0.0);
  for (const auto* v : vectors)
    for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += (*v)[i] / static_cast<double>(vectors.size());
  double scale = 1.0;
  for (double m : mean) scale = std::max(scale, std::abs(m));
  std::vector<double> deviations;
  for (const auto* v : vectors) {
    double worst = 0;
    for (std::size_t i = 0; i < mean.size(); ++i) worst = std::max(worst, std::abs((*v)[i] - mean[i]));
    deviations.push_back(worst / scale);
  }
  return deviations;
}

// Six ranks; rank 5 stops after `kill_at` steps and its transport is closed;
// the survivors get the view without it and run to the end.
TEST_P(ViewChangeTest, SurvivorsAdoptTheViewAndAgree) {
  const Case c = GetParam();
  constexpr int kSize = 6, kVictim = 5;
  const int kill_at = c.steps / 3;
  Board board;
  std::shared_ptr<const gossip::Topology> topology;
  if (c.topology != "none") topology = gossip::make_topology({.kind = c.topology, .nodes = kSize});
  auto ranks = make_ranks(kSize, c, board, topology);

  run_and_kill(ranks, kVictim, kill_at, c.steps, [&](int r) { ranks[r]->algorithm->step(ranks[r]->x); });

  std::vector<const std::vector<float>*> survivors;
  for (int r = 0; r < kVictim; ++r) survivors.push_back(&ranks[r]->x);
  const std::vector<double> deviations = relative_deviations(survivors);
  for (int r = 0; r < kVictim; ++r) {
    const auto stats = ranks[r]->algorithm->stats();
    EXPECT_EQ(stats.view_generation, 1u) << "rank " << r;
    EXPECT_EQ(stats.steps, static_cast<std::uint64_t>(c.steps)) << "rank " << r;
    EXPECT_LT(deviations[r], c.tolerance) << "rank " << r << " disagrees with the survivors";
    EXPECT_EQ(ranks[r]->gate->current().generation, 1u);
  }
  for (int r = 0; r < kVictim; ++r) {
    ranks[r]->algorithm.reset();
    ranks[r]->gate.reset();
  }
}

// A gradient method under SGD with momentum: each rank starts with its own
// momentum, as the survivors of a round that lost a peer are left with
// theirs (their own gradient went into it). The view that drops the victim
// re-averages the parameters and the momentum handed over
// (set_optimizer_state): from then on every survivor applies the same
// update to the same model and momentum, and they end equal. Without the
// momentum's re-averaging their models would drift apart after the view.
class GradientViewChangeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GradientViewChangeTest, SurvivorsAgreeOnTheModelAndTheMomentum) {
  const Case c{GetParam(), "none", "none", 1.0, 30, 1e-6};
  constexpr int kSize = 4, kVictim = 3, kKillAt = 10;
  constexpr std::size_t kFloats = 200;
  const std::vector<std::size_t> layers{120, 80};
  Board board;
  auto ranks = make_ranks(kSize, c, board, nullptr);
  std::vector<std::vector<float>> gradient(kSize, std::vector<float>(kFloats)), momentum(kSize);
  for (int r = 0; r < kSize; ++r) {
    momentum[r] = initial_vector(13, r, kFloats);
    ranks[r]->algorithm->set_gradients(gradient[r], layers);
    ranks[r]->algorithm->set_optimizer_state(momentum[r]);
  }

  std::vector<std::vector<float>> targets;  // each rank its own data
  for (int r = 0; r < kSize; ++r) targets.push_back(initial_vector(17, r, kFloats));
  run_and_kill(ranks, kVictim, kKillAt, c.steps, [&](int r) {
    auto& rank = *ranks[r];
    auto& g = gradient[r];
    auto& m = momentum[r];
    for (std::size_t i = 0; i < kFloats; ++i) g[i] = rank.x[i] - targets[r][i];
    for (std::size_t l = layers.size(); l-- > 0;) rank.algorithm->gradient_ready(l);
    rank.algorithm->average_gradients();
    for (std::size_t i = 0; i < kFloats; ++i) {
      m[i] = 0.9f * m[i] + g[i];
      rank.x[i] -= 0.05f * m[i];
    }
    rank.algorithm->step(rank.x);
  });

  std::vector<const std::vector<float>*> models, momenta;
  for (int r = 0; r < kVictim; ++r) {
    models.push_back(&ranks[r]->x);
    momenta.push_back(&momentum[r]);
  }
  const std::vector<double> model_deviations = relative_deviations(models);
  const std::vector<double> momentum_deviations = relative_deviations(momenta);
  for (int r = 0; r < kVictim; ++r) {
    EXPECT_EQ(ranks[r]->algorithm->stats().view_generation, 1u) << "rank " << r;
    EXPECT_LT(momentum_deviations[r], c.tolerance) << "rank " << r << "'s momentum disagrees with the survivors'";
    EXPECT_LT(model_deviations[r], c.tolerance) << "rank " << r << "'s model disagrees with the survivors'";
  }
  for (int r = 0; r < kVictim; ++r) {
    ranks[r]->algorithm.reset();
    ranks[r]->gate.reset();
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, GradientViewChangeTest,
                         ::testing::Values("bsp-a2a", "mg-wfbp", "bytescheduler-a2a"), [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Four ranks run; a fifth joins: its transport connects to theirs while
// they add_peer it, the view with it is proposed to all, and rank 0
// sponsors it: at the view's first round it sends the joiner that round and
// its parameters (raw channel 0). All five end in agreement, the joiner
// having entered at the view's first round.
TEST_P(ViewChangeTest, AJoinerEntersAtTheViewAndAgrees) {
  const Case c = GetParam();
  if (c.algorithm == "adpsgd") GTEST_SKIP() << "adpsgd takes no new members (docs/resilience.md)";
  constexpr int kSize = 4, kJoiner = 4, kSponsor = 0;
  const fabric::Tag kJoinTag = 77;  // channel 0: raw fabric traffic
  Board board;
  std::shared_ptr<const gossip::Topology> topology;
  if (c.topology != "none") topology = gossip::make_topology({.kind = c.topology, .nodes = kSize});
  auto ranks = make_ranks(kSize, c, board, topology);

  // The joiner's data plane: members add it, it connects to them.
  fabric::TransportOptions o;
  o.backend = "asio";
  o.peers_on_this_host = true;
  o.rank = kJoiner;
  o.size = kJoiner + 1;
  o.connect_timeout = 20s;
  auto joiner = std::make_unique<Rank>();
  joiner->transport = fabric::make_transport(o);
  std::vector<fabric::PeerInfo> peers;
  for (int r = 0; r < kSize; ++r) peers.push_back(fabric::PeerInfo{r, "host" + std::to_string(r), ""});
  // Addresses are the members' own (a member's PeerInfo for itself is unused by others).
  const fabric::PeerInfo joiner_info{kJoiner, "host4", joiner->transport->address()};
  View with_joiner{1, {0, 1, 2, 3, 4}};

  // The sponsor's side of the join: round number and parameters.
  auto sponsor_sends = [&](std::span<float> params, std::uint64_t first_round) {
    auto message = std::make_shared<std::vector<double>>(params.begin(), params.end());
    message->insert(message->begin(), static_cast<double>(first_round));
    auto request = ranks[kSponsor]->transport->isend(kJoiner, kJoinTag, message->data(), message->size() * 8);
    request->retain(message);
    request->wait_until(fabric::Clock::now() + 20s);
  };
  std::atomic<std::uint64_t> joined_at{0};
  auto joiner_receives = [&](std::span<float> params, std::uint64_t first_round) {
    std::vector<double> message(params.size() + 1);
    auto request = joiner->transport->irecv(kSponsor, kJoinTag, message.data(), message.size() * 8);
    ASSERT_TRUE(request->wait_until(fabric::Clock::now() + 20s));
    EXPECT_EQ(static_cast<std::uint64_t>(message[0]), first_round);
    joined_at = first_round;
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(message[i + 1]);
  };
  // Members' gates: the sponsor sends when it adopts the view with the joiner.
  for (int r = 0; r < kSize; ++r) {
    auto& rank = *ranks[r];
    rank.algorithm->set_views(nullptr);
    rank.gate.reset();
    rank.gate = std::make_unique<ViewGate>(
        View{0, {0, 1, 2, 3}}, r, board.agree_for(r),
        prepare_for(
            c.topology, [&rank] { return rank.transport->size(); },
            r == kSponsor ? std::function<void(std::span<float>, std::uint64_t)>(sponsor_sends)
                          : [](std::span<float>, std::uint64_t) {}));
    rank.algorithm->set_views(rank.gate.get());
  }

  std::atomic<bool> proposed{false};
  std::vector<std::future<void>> runs;
  for (int r = 0; r < kSize; ++r) {
    runs.push_back(std::async(std::launch::async, [&, r] {
      auto& rank = *ranks[r];
      for (int t = 0; t < c.steps; ++t) {
        if (t == 2 * c.steps / 3) wait_for([&] { return proposed.load(); }, 60s);
        rank.algorithm->step(rank.x);
      }
      rank.algorithm->finish(rank.x);
    }));
  }
  ASSERT_TRUE(
      wait_for([&] { return ranks[0]->algorithm->stats().steps >= static_cast<std::uint64_t>(c.steps / 3); }, 60s));
  // Data plane first (transport.h: no message before both sides returned),
  // then the view.
  std::vector<std::future<void>> adds;
  for (int r = 0; r < kSize; ++r)
    adds.push_back(std::async(std::launch::async, [&, r] { ranks[r]->transport->add_peer(joiner_info); }));
  std::vector<fabric::PeerInfo> joiner_peers;
  for (int r = 0; r < kSize; ++r)
    joiner_peers.push_back(fabric::PeerInfo{r, "host" + std::to_string(r), address_of(*ranks[r])});
  joiner_peers.push_back(joiner_info);
  joiner->transport->connect(joiner_peers);
  for (auto& f : adds) f.get();
  joiner->comm = std::make_unique<gossip::FabricCommunicator>(*joiner->transport, joiner_peers);
  joiner->gate =
      std::make_unique<ViewGate>(View{0, {0, 1, 2, 3}}, kJoiner, board.agree_for(kJoiner),
                                 prepare_for(
                                     c.topology, [&] { return joiner->transport->size(); }, joiner_receives));
  gossip::AlgorithmOptions options;
  options.compressor = c.compressor;
  options.gamma = c.gamma;
  options.timeout_s = 30;
  options.tolerate_lost_peers = true;
  auto joiner_graph = graph_of(c.topology, with_joiner, kJoiner + 1);
  joiner->algorithm = gossip::make_algorithm(c.algorithm, options, *joiner->comm, joiner_graph.get());
  joiner->algorithm->set_views(joiner->gate.get());
  joiner->x.assign(200, 1000.0f);  // replaced by the sponsor's model
  for (int r = 0; r < kSize; ++r) ranks[r]->gate->propose(with_joiner);
  joiner->gate->propose(with_joiner);
  proposed = true;
  // Period 1: round k is step k + 1, so the members' last round is steps - 1.
  joiner->algorithm->step(joiner->x);  // blocks until admitted; enters at the view's first round
  const auto first = static_cast<int>(joined_at.load());
  for (int t = first + 1; t < c.steps; ++t) joiner->algorithm->step(joiner->x);
  joiner->algorithm->finish(joiner->x);
  for (auto& f : runs) f.get();

  std::vector<double> mean(joiner->x.size(), 0.0);
  auto all = [&](int r) -> std::vector<float>& { return r == kJoiner ? joiner->x : ranks[r]->x; };
  for (int r = 0; r <= kJoiner; ++r)
    for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += all(r)[i] / (kJoiner + 1);
  double scale = 0;
  for (double m : mean) scale = std::max(scale, std::abs(m));
  for (int r = 0; r <= kJoiner; ++r) {
    double worst = 0;
    for (std::size_t i = 0; i < mean.size(); ++i) worst = std::max(worst, std::abs(all(r)[i] - mean[i]));
    EXPECT_LT(worst, c.tolerance * std::max(1.0, scale)) << "rank " << r << " disagrees after the join";
  }
  EXPECT_GT(first, 0);
  EXPECT_EQ(joiner->algorithm->stats().view_generation, 1u);
  for (int r = 0; r < kSize; ++r) ranks[r]->algorithm.reset();
  joiner->algorithm.reset();
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ViewChangeTest,
                         ::testing::Values(Case{"dpsgd", "exponential"},
                                           Case{"choco", "exponential", "topk:0.1", 0.05, 1500, 1e-3},
                                           Case{"sgp", "one-peer-exponential"},
                                           Case{"allreduce", "none", "none", 1.0, 60, 1e-6},
                                           Case{"local-sgd", "none", "none", 1.0, 60, 1e-6},
                                           Case{"topk-allreduce", "none", "topk:0.1", 1.0, 60, 1e-6},
                                           Case{"adpsgd", "exponential", "none", 1.0, 400, 1e-3}),
                         [](const auto& info) {
                           std::string name = info.param.algorithm;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace murmur::testing
