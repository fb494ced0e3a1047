// murmur-sim's gossip side: the NetworkModel and SimCommunicator against the
// alpha-beta formula, then run_gossip with the real algorithms: exact
// consensus, hand-computed iteration times, compressed traffic, scale, the
// adaptive scheduler, reproducibility.
//
// Numbers are powers of two where times are compared exactly, so that
// every sum the simulator makes is exact in binary floating point.
#include "sim/runtime/gossip_run.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "fabric/errors.h"
#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/communicator.h"
#include "gossip/topology/factory.h"
#include "sim/network_model.h"
#include "sim/runtime/sim_communicator.h"
#include "sim/runtime/virtual_runtime.h"

namespace murmur::sim::runtime {
namespace {

constexpr double kLatency = 1.0 / 1024;              // s
constexpr double kBandwidth = 1024.0 * 1024 * 1024;  // B/s: 4 MiB in 1/256 s

ClusterSpec cluster(int gpus, int per_node) {
  ClusterSpec c;
  c.gpus = gpus;
  c.gpus_per_node = per_node;
  c.network = "custom";
  c.inter_node = {kLatency, kBandwidth};
  c.intra_node = {kLatency / 4, kBandwidth * 4};
  return c;
}

// ---- NetworkModel and SimCommunicator --------------------------------------

std::vector<std::byte> bytes(std::size_t n, int fill) { return std::vector<std::byte>(n, std::byte(fill)); }

TEST(SimNetwork, PingPongTakesTheAlphaBetaTimeEachWay) {
  VirtualRuntime rt;
  NetworkModel model(cluster(2, 1));
  SimNetwork net(rt, model, /*byte_scale=*/1024);
  const auto tag = gossip::make_tag(1, gossip::Phase::kDpsgd, 0);
  const std::size_t real = 4096;  // 4 MiB simulated
  const double one_way = model.link(0, 1).seconds(real * 1024.0);
  double send_done = -1, pong_at = -1, ping_at = -1;
  rt.spawn("rank 0", [&] {
    SimCommunicator comm(net, 0);
    auto ping = bytes(real, 7);
    std::vector<fabric::RequestPtr> r{comm.isend(1, tag, ping)};
    comm.wait_all(r, 60);
    send_done = comm.now();
    std::vector<std::byte> pong(real);
    std::vector<fabric::RequestPtr> back{comm.irecv(1, tag, pong)};
    comm.wait_all(back, 60);
    pong_at = comm.now();
    EXPECT_EQ(back[0]->bytes(), real);
    EXPECT_EQ(pong, bytes(real, 9));
  });
  rt.spawn("rank 1", [&] {
    SimCommunicator comm(net, 1);
    std::vector<std::byte> ping(real);
    std::vector<fabric::RequestPtr> r{comm.irecv(0, tag, ping)};
    comm.wait_all(r, 60);
    ping_at = comm.now();
    EXPECT_EQ(ping, bytes(real, 7));
    auto pong = bytes(real, 9);
    std::vector<fabric::RequestPtr> back{comm.isend(0, tag, pong)};
    comm.wait_all(back, 60);
  });
  rt.run();
  EXPECT_EQ(one_way, kLatency + 1.0 / 256);
  EXPECT_EQ(ping_at, one_way);
  EXPECT_EQ(send_done, one_way);  // a send completes when delivered
  EXPECT_EQ(pong_at, 2 * one_way);
  EXPECT_EQ(model.link_bytes().at({0, 1}), real * 1024.0);
  EXPECT_EQ(model.nic_bytes()[1].received, real * 1024.0);
}

// depart() then arrive() at each departure time, as SimNetwork calls them.
TEST(SimNetwork, TwoSendersOnOneNicTakeTwiceTheSerialization) {
  NetworkModel model(cluster(4, 2));  // ranks 0, 1 on node 0; 2, 3 on node 1
  const double serial = 1.0 / 256;
  const double bytes = 4.0 * 1024 * 1024;
  const double first = model.depart(0, 2, bytes, 0);
  const double second = model.depart(1, 3, bytes, 0);
  const double local = model.depart(0, 1, bytes, 0);  // inside a node: GPU ports, not the NIC
  EXPECT_EQ(first, serial);
  EXPECT_EQ(second, 2 * serial);  // node 0's NIC sends one after the other
  EXPECT_EQ(local, serial / 4);
  EXPECT_EQ(model.arrive(0, 1, bytes, local), serial / 4 + kLatency / 4);
  EXPECT_EQ(model.arrive(0, 2, bytes, first), serial + kLatency);
  EXPECT_EQ(model.arrive(1, 3, bytes, second), 2 * serial + kLatency);
  // Two nodes into one: the receiving NIC serializes them.
  const double a = model.depart(0, 2, bytes, 1.0);
  const double b = model.depart(3, 1, bytes, 1.0);  // node 1 -> node 0: its own queues
  const double c = model.depart(2, 0, bytes, 1.0);  // waits behind b on node 1's NIC
  EXPECT_EQ(model.arrive(0, 2, bytes, a), 1.0 + serial + kLatency);
  EXPECT_EQ(model.arrive(3, 1, bytes, b), 1.0 + serial + kLatency);
  EXPECT_EQ(model.arrive(2, 0, bytes, c), 1.0 + 2 * serial + kLatency);
  NetworkModel fan_in(cluster(3, 1));
  const double x = fan_in.depart(0, 2, bytes, 0), y = fan_in.depart(1, 2, bytes, 0);
  EXPECT_EQ(x, y);  // different senders: in parallel
  EXPECT_EQ(fan_in.arrive(0, 2, bytes, x), serial + kLatency);
  EXPECT_EQ(fan_in.arrive(1, 2, bytes, y), 2 * serial + kLatency);  // node 2's NIC takes one after the other
  EXPECT_EQ(model.depart(2, 2, bytes, 3.0), 3.0);                   // to oneself: free
  EXPECT_EQ(model.inter_node_bytes(), 5 * bytes);
  EXPECT_EQ(model.intra_node_bytes(), bytes);
  EXPECT_EQ(model.messages(), 6u);
}

// A link episode slows one pair without holding up the rest of the
// receiver's traffic: rank 2's message to rank 1 lands after its own
// serialization, not behind rank 0's slowed one. And one pair's messages
// keep their order across the episode's end.
TEST(SimNetwork, ASlowedPairDoesNotHoldUpTheReceiversOtherTraffic) {
  ClusterSpec c = cluster(3, 1);
  const double slow_Bps = kBandwidth / 100;
  c.episodes.push_back({0, 1, 0.0, 0.1, {kLatency, slow_Bps}});
  NetworkModel model(c);
  const double bytes = 4.0 * 1024 * 1024;
  const double serial = 1.0 / 256;
  // The stages in time order, as SimNetwork runs them.
  const double a_sent = model.depart(0, 1, bytes, 0), c_sent = model.depart(2, 1, bytes, 0);
  const auto a = model.through_episode(0, 1, bytes, a_sent);
  const auto b = model.through_episode(2, 1, bytes, c_sent);
  EXPECT_EQ(a.ready_s, serial + bytes / slow_Bps);
  EXPECT_EQ(b.ready_s, serial);
  EXPECT_EQ(model.arrive(2, 1, bytes, b), serial + kLatency);  // not behind the slowed message
  EXPECT_EQ(model.arrive(0, 1, bytes, a), serial + bytes / slow_Bps + kLatency);
  // Posted after the episode, while the slowed message is still in it:
  // through no earlier than that one, so it lands after it.
  const double later_sent = model.depart(0, 1, bytes, 0.2);
  const auto later = model.through_episode(0, 1, bytes, later_sent);
  EXPECT_EQ(later.ready_s, serial + bytes / slow_Bps);
  EXPECT_GT(model.arrive(0, 1, bytes, later), serial + bytes / slow_Bps + kLatency);
}

TEST(SimNetwork, ReceivePostedBeforeOrAfterTheArrival) {
  VirtualRuntime rt;
  NetworkModel model(cluster(2, 1));
  SimNetwork net(rt, model);
  const double one_way = model.link(0, 1).seconds(64);
  double early = -1, late = -1, sent = -1;
  rt.spawn("sender", [&] {
    SimCommunicator comm(net, 0);
    auto a = bytes(64, 1), b = bytes(64, 2);
    std::vector<fabric::RequestPtr> r{comm.isend(1, 1, a), comm.isend(1, 2, b)};
    comm.wait_all(r, 60);
    sent = comm.now();
  });
  rt.spawn("receiver", [&] {
    SimCommunicator comm(net, 1);
    std::vector<std::byte> a(64), b(64);
    std::vector<fabric::RequestPtr> first{comm.irecv(0, 1, a)};  // posted before it arrives
    comm.wait_all(first, 60);
    early = comm.now();
    rt.sleep_for(5);
    std::vector<fabric::RequestPtr> second{comm.irecv(0, 2, b)};  // arrived long ago
    EXPECT_TRUE(second[0]->test());
    comm.wait_all(second, 60);
    late = comm.now();
    EXPECT_EQ(b, bytes(64, 2));
  });
  rt.run();
  EXPECT_EQ(early, one_way);
  EXPECT_EQ(sent, one_way + 64 / kBandwidth);  // the second message queued behind the first
  EXPECT_EQ(late, one_way + 5);
}

// A gathered send is one message of its pieces' bytes, timed as one.
TEST(SimNetwork, AGatheredSendArrivesAsItsPiecesBackToBack) {
  VirtualRuntime rt;
  NetworkModel model(cluster(2, 1));
  SimNetwork net(rt, model);
  const auto header = bytes(8, 3), index = bytes(24, 4), values = bytes(96, 5);
  double arrived = -1;
  rt.spawn("sender", [&] {
    SimCommunicator comm(net, 0);
    std::vector<fabric::RequestPtr> r{
        comm.isendv(1, 1, {fabric::as_piece(header), fabric::as_piece(index), fabric::as_piece(values)})};
    comm.wait_all(r, 60);
  });
  rt.spawn("receiver", [&] {
    SimCommunicator comm(net, 1);
    std::vector<std::byte> got(128);
    std::vector<fabric::RequestPtr> r{comm.irecv(0, 1, got)};
    comm.wait_all(r, 60);
    arrived = comm.now();
    EXPECT_EQ(r[0]->bytes(), 128u);
    std::vector<std::byte> whole(header);
    whole.insert(whole.end(), index.begin(), index.end());
    whole.insert(whole.end(), values.begin(), values.end());
    EXPECT_EQ(got, whole);
  });
  rt.run();
  EXPECT_EQ(arrived, model.link(0, 1).seconds(128));
}

TEST(SimNetwork, MessagesOfOneTagMatchInPostingOrderAndOversizedOnesFail) {
  VirtualRuntime rt;
  NetworkModel model(cluster(2, 1));
  SimNetwork net(rt, model);
  rt.spawn("sender", [&] {
    SimCommunicator comm(net, 0);
    auto a = bytes(8, 1), b = bytes(16, 2), c = bytes(32, 3);
    std::vector<fabric::RequestPtr> r{comm.isend(1, 5, a), comm.isend(1, 5, b), comm.isend(1, 5, c)};
    comm.wait_all(r, 60);
  });
  rt.spawn("receiver", [&] {
    SimCommunicator comm(net, 1);
    std::vector<std::byte> a(8), b(16), c(16);
    std::vector<fabric::RequestPtr> r{comm.irecv(0, 5, a), comm.irecv(0, 5, b), comm.irecv(0, 5, c)};
    try {
      comm.wait_all(r, 60);
      ADD_FAILURE() << "a 32-byte message fit a 16-byte buffer";
    } catch (const fabric::PeerError& e) {
      EXPECT_EQ(e.rank(), 0);
      EXPECT_NE(std::string(e.what()).find("message of 32 bytes with tag 5 does not fit the receive buffer of 16"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(a, bytes(8, 1));
    EXPECT_EQ(b, bytes(16, 2));
    EXPECT_EQ(r[1]->bytes(), 16u);
  });
  rt.run();
}

TEST(SimNetwork, TimeoutIsAPeerErrorInVirtualTime) {
  VirtualRuntime rt;
  NetworkModel model(cluster(2, 1));
  SimNetwork net(rt, model);
  double failed_at = -1;
  const auto host_start = std::chrono::steady_clock::now();
  rt.spawn("waiter", [&] {
    SimCommunicator comm(net, 0);
    std::vector<std::byte> buffer(8);
    std::vector<fabric::RequestPtr> r{comm.irecv(1, 1, buffer)};
    try {
      comm.wait_all(r, 30);
      ADD_FAILURE() << "no timeout";
    } catch (const fabric::PeerError& e) {
      failed_at = comm.now();
      EXPECT_EQ(e.rank(), 1);
      EXPECT_EQ(e.host(), "sim-node-1");
      EXPECT_NE(e.reason().find("no completion within 30 s"), std::string::npos) << e.what();
    }
    // The peer stays failed for this rank.
    std::vector<fabric::RequestPtr> again{comm.irecv(1, 2, buffer)};
    EXPECT_THROW(comm.wait_all(again, 30), fabric::PeerError);
    EXPECT_EQ(comm.now(), 30.0);
  });
  rt.spawn("silent peer", [] {});
  rt.run();
  EXPECT_EQ(failed_at, 30.0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count(), 5.0);
}

// ---- real algorithms failing on the virtual clock -----------------------------

// Ranks of a 4-ring running dpsgd (no overlap) through SimCommunicators;
// step(rank, iteration, algorithm, params) runs each of 5 iterations.
template <typename Step>
void run_ring(VirtualRuntime& rt, SimNetwork& net, double timeout_s, Step step) {
  static const auto ring = gossip::make_topology({.kind = "ring", .nodes = 4});
  for (int r = 0; r < 4; ++r) {
    rt.spawn("rank " + std::to_string(r), [&net, r, timeout_s, step] {
      SimCommunicator comm(net, r);
      gossip::AlgorithmOptions o;
      o.overlap = false;
      o.timeout_s = timeout_s;
      auto algorithm = gossip::make_algorithm("dpsgd", o, comm, ring.get());
      std::vector<float> x(64, static_cast<float>(r));
      for (int i = 0; i < 5; ++i) step(r, i, *algorithm, x);
    });
  }
}

TEST(SimFailures, AStalledPeerBecomesAPeerErrorAfterTheVirtualTimeout) {
  VirtualRuntime rt;
  NetworkModel model(cluster(4, 1));
  SimNetwork net(rt, model);
  const auto host_start = std::chrono::steady_clock::now();
  run_ring(rt, net, 100, [&rt](int r, int i, gossip::Algorithm& a, std::vector<float>& x) {
    if (r == 2 && i == 2) rt.sleep_for(1e6);  // stalls: its neighbours time out
    a.step(x);
  });
  try {
    rt.run();
    FAIL() << "no failure";
  } catch (const fabric::PeerError& e) {
    EXPECT_EQ(e.rank(), 2) << e.what();
    EXPECT_EQ(e.host(), "sim-node-2");
    EXPECT_NE(e.reason().find("no completion within 100 s"), std::string::npos) << e.what();
  }
  EXPECT_LT(rt.now(), 200);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count(), 5.0);
}

// The others are blocked in rounds that wait for the failed rank: they are
// unwound (their algorithms shut down cleanly) and run() reports the crash.
TEST(SimFailures, ACrashUnwindsTheOtherRanksAlgorithms) {
  VirtualRuntime rt;
  NetworkModel model(cluster(4, 1));
  SimNetwork net(rt, model);
  run_ring(rt, net, 3600, [](int r, int i, gossip::Algorithm& a, std::vector<float>& x) {
    if (r == 0 && i == 3) throw std::runtime_error("rank 0 crashed");
    a.step(x);
  });
  try {
    rt.run();
    FAIL() << "no failure";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 0 crashed");
  }
  EXPECT_LT(rt.now(), 1.0);  // not the 3600 s timeout: the others were cancelled
}

// ---- run_gossip --------------------------------------------------------------

// 2^20 parameters (4 MiB of gradient), `compute_s` per iteration.
ModelProfile profile(double compute_s) {
  ModelProfile p;
  p.name = "test";
  p.batch = 32;
  p.single_gpu_samples_per_s = p.batch / compute_s;
  p.layers = {{"all", std::int64_t{1} << 20, compute_s / 2, compute_s / 2}};
  return p;
}

GossipSetup setup(const std::string& algorithm, int gpus, int per_node, double compute_s) {
  GossipSetup s;
  s.profile = profile(compute_s);
  s.cluster = cluster(gpus, per_node);
  s.options.algorithm = algorithm;
  s.proxy = 1024;  // byte_scale 1024
  return s;
}

TEST(GossipRun, DpsgdOnARingReachesTheExactMean) {
  GossipSetup s = setup("dpsgd", 16, 4, 0.01);
  s.options.topology = "ring";
  s.perturb = false;
  s.proxy = 256;
  s.warmup_iterations = 0;
  s.iterations = 400;  // MH on the 16-ring: lambda_2 = 0.949, 0.949^400 ~ 1e-9
  const auto r = run_gossip(s);
  EXPECT_GT(r.initial_consensus_distance, 0.5);
  EXPECT_LT(r.consensus_distance, 1e-6);
  EXPECT_LT(r.mean_drift, 1e-6);
  EXPECT_EQ(r.links.size(), 32u);  // each rank to its two neighbours
}

// Two nodes of one GPU, one link: a round moves 4 MiB each way in
// T = latency + 4 MiB / bandwidth = 1/1024 + 1/256 s.
TEST(GossipRun, DpsgdIterationTimeIsComputePlusOrMaxOfTheRound) {
  const double round = kLatency + 1.0 / 256;
  struct Case {
    double compute;
    bool overlap;
    double iteration;
  };
  for (const Case& c :
       {Case{1.0 / 64, false, 1.0 / 64 + round}, Case{1.0 / 64, true, 1.0 / 64}, Case{1.0 / 512, true, round}}) {
    GossipSetup s = setup("dpsgd", 2, 1, c.compute);
    s.options.topology = "ring";
    s.options.overlap = c.overlap;
    s.iterations = 8;
    const auto r = run_gossip(s);
    SCOPED_TRACE(testing::Message() << "compute " << c.compute << " overlap " << c.overlap);
    EXPECT_DOUBLE_EQ(r.iteration_s, c.iteration);
    EXPECT_DOUBLE_EQ(r.iteration_max_s, c.iteration);
    EXPECT_DOUBLE_EQ(r.compute_s, c.compute);
    EXPECT_NEAR(r.wait_s, c.iteration - c.compute, 1e-12);
    EXPECT_NEAR(r.overlap_s, round - (c.iteration - c.compute), 1e-12);
    EXPECT_DOUBLE_EQ(r.samples_per_s, 2 * 32 / c.iteration);
    EXPECT_DOUBLE_EQ(r.speedup, 2 * c.compute / c.iteration);
    EXPECT_EQ(r.byte_scale, 1024.0);
    EXPECT_EQ(r.bytes_per_iteration, 2 * 4.0 * 1024 * 1024);  // one gradient each way
  }
}

// Ring all-reduce on p nodes: 2 (p - 1) steps of n / p each.
TEST(GossipRun, AllreduceTakesTheRingAlphaBetaTime) {
  const int p = 4;
  const double compute = 1.0 / 64;
  GossipSetup s = setup("allreduce", p, 1, compute);
  s.iterations = 4;
  const auto r = run_gossip(s);
  const double expected = compute + 2 * (p - 1) * (kLatency + (4.0 * 1024 * 1024 / p) / kBandwidth);
  EXPECT_DOUBLE_EQ(r.iteration_s, expected);
  EXPECT_DOUBLE_EQ(r.wait_s, expected - compute);
  EXPECT_EQ(r.overlap_s, 0.0);
}

TEST(GossipRun, ChocoTopOnePercentSendsFarFewerBytesThanDpsgd) {
  GossipSetup dense = setup("dpsgd", 16, 4, 0.01);
  dense.proxy = 4096;
  dense.iterations = 5;
  GossipSetup sparse = dense;
  sparse.options.algorithm = "choco";
  sparse.options.compressor = "topk:0.01";
  const auto d = run_gossip(dense);
  const auto c = run_gossip(sparse);
  const double ratio = d.bytes_total / c.bytes_total;
  // top-k sends an index next to each value (delta-varint: 1-2 bytes) and an
  // 8-byte header: 1% of the values costs 1/60 to 1/80 of the dense bytes.
  EXPECT_GT(ratio, 50) << d.bytes_total << " vs " << c.bytes_total;
  EXPECT_LT(ratio, 100);
  EXPECT_LT(c.iteration_s, d.iteration_s);
  std::printf("dpsgd / choco topk:0.01 simulated bytes: %.1f\n", ratio);
}

TEST(GossipRun, TwoHundredFiftySixPeersOnAnExponentialGraph) {
  GossipSetup s = setup("dpsgd", 256, 8, 0.1);
  s.options.topology = "exponential";
  s.iterations = 5;
  s.warmup_iterations = 1;
  const auto r = run_gossip(s);
  EXPECT_GE(r.iteration_s, 0.1);
  EXPECT_LT(r.consensus_distance, r.initial_consensus_distance);
  std::printf("256 peers, exponential dpsgd, 6 iterations: %.2f s host, %llu hand-offs, %.4f s/iteration\n",
              r.host_seconds, static_cast<unsigned long long>(r.thread_switches), r.iteration_s);
  EXPECT_LT(r.host_seconds, 60);
}

TEST(GossipRun, AdaptiveScheduleDecides) {
  GossipSetup s = setup("choco", 8, 4, 0.01);
  s.options.topology = "exponential";
  s.options.schedule = "adaptive:min_ratio=0.01,max_period=4";
  s.options.schedule_interval = 5;
  s.iterations = 30;
  const auto r = run_gossip(s);
  EXPECT_EQ(r.schedule_decisions, (30 + 2) / 5);
  ASSERT_TRUE(r.final_period.has_value());
  ASSERT_TRUE(r.final_ratio.has_value());
  EXPECT_GE(*r.final_period, 1);
  EXPECT_LE(*r.final_period, 4);
  EXPECT_GE(*r.final_ratio, 0.01);
  EXPECT_LE(*r.final_ratio, 1.0);
}

TEST(GossipRun, RunsAreReproducible) {
  GossipSetup s = setup("choco", 8, 2, 0.01);
  s.options.topology = "exponential";
  s.iterations = 6;
  const auto a = run_gossip(s);
  const auto b = run_gossip(s);
  EXPECT_EQ(a.iteration_s, b.iteration_s);
  EXPECT_EQ(a.bytes_total, b.bytes_total);
  EXPECT_EQ(a.consensus_distance, b.consensus_distance);
  EXPECT_EQ(a.thread_switches, b.thread_switches);
}

TEST(GossipRun, RefusesWhatItCannotSimulate) {
  EXPECT_THROW(run_gossip(setup("adpsgd", 4, 1, 0.01)), std::invalid_argument);
  EXPECT_THROW(run_gossip(setup("nope", 4, 1, 0.01)), std::invalid_argument);
  GossipSetup s = setup("choco", 8, 1, 0.01);
  s.options.topology = "one-peer-exponential";  // time-varying
  EXPECT_THROW(run_gossip(s), std::invalid_argument);
}

// The 1024-peer measurement for the report (minutes of CPU on a busy
// 2-core machine are not a unit test): run with
// --gtest_also_run_disabled_tests --gtest_filter=*Thousand*
TEST(GossipRun, DISABLED_ThousandPeers) {
  for (const char* algorithm : {"dpsgd", "choco"}) {
    GossipSetup s = setup(algorithm, 1024, 8, 0.1);
    s.options.topology = "exponential";
    s.iterations = 18;
    s.warmup_iterations = 2;
    const auto r = run_gossip(s);
    std::printf("1024 peers, exponential %s, 20 iterations: %.2f s host, %llu hand-offs, %.4f s/iteration\n", algorithm,
                r.host_seconds, static_cast<unsigned long long>(r.thread_switches), r.iteration_s);
  }
}

}  // namespace
}  // namespace murmur::sim::runtime
