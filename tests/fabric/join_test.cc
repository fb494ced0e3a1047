// Peers that join a running data plane (transport.h, "Joining a running
// job"): real transports on loopback, one process, parameterised over asio,
// libfabric tcp, libfabric shm, per-link shm+tcp (ranks on two emulated
// machines) and asio wrapped in the shaper. A job of 3 ranks runs; a 4th
// transport, created later, joins: the members add_peer it, it connect()s
// with them, and messages then flow both ways between it and every member
// under the usual tag and ordering rules.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "fabric/errors.h"
#include "fabric/shaper/shaped_transport.h"
#include "fabric/shaper/shaper_config.h"
#include "fabric/transport_options.h"
#include "tests/support/byte_pattern.h"

namespace murmur::fabric {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 60s;
// Small chunks, so that the larger messages below travel as several.
constexpr std::size_t kChunkBytes = std::size_t{64} << 10;

struct Backend {
  std::string label;  // the test name's suffix
  std::string backend;
  std::string provider;
  bool shaped = false;
};

// ctest shows the label rather than the struct's bytes.
void PrintTo(const Backend& backend, std::ostream* os) { *os << backend.label; }

std::string host_of(int rank) { return "host-" + std::to_string(rank); }

std::unique_ptr<Transport> open_transport(const Backend& backend, int rank, int size,
                                          const shaper::ShaperConfig& shaping = {}) {
  TransportOptions options;
  options.backend = backend.backend;
  options.provider = backend.provider;
  options.peers_on_this_host = true;
  options.rank = rank;
  options.size = size;
  options.chunk_bytes = kChunkBytes;
  options.connect_timeout = 20s;
  if (backend.provider.find('+') != std::string::npos) {
    // Per-link: even ranks on one emulated machine, odd ones on another, so
    // that a job and its joiners have links of both kinds.
    options.machine = rank % 2 == 0 ? "machine-even" : "machine-odd";
    options.bind_host = "127.0.0.1";
  }
  auto transport = make_transport(options);
  if (!backend.shaped) return transport;
  return shaper::make_shaped_transport(std::move(transport), shaping, /*seed=*/1);
}

PeerInfo info_of(Transport& transport) {
  return PeerInfo{transport.rank(), host_of(transport.rank()), transport.address()};
}

PeerInfo absent(int rank) { return PeerInfo{-1, host_of(rank), ""}; }

// Runs every call at once (connect and add_peer may block until the other
// side acts) and rethrows the first failure.
void run_together(std::vector<std::function<void()>> calls) {
  std::vector<std::future<void>> running;
  for (auto& call : calls) running.push_back(std::async(std::launch::async, std::move(call)));
  for (auto& r : running) r.get();
}

std::vector<std::unique_ptr<Transport>> make_job(const Backend& backend, int size,
                                                 const shaper::ShaperConfig& shaping = {}) {
  std::vector<std::unique_ptr<Transport>> job;
  std::vector<PeerInfo> peers;
  for (int r = 0; r < size; ++r) {
    job.push_back(open_transport(backend, r, size, shaping));
    peers.push_back(info_of(*job.back()));
  }
  std::vector<std::function<void()>> connects;
  for (auto& t : job) connects.push_back([&t, &peers] { t->connect(peers); });
  run_together(std::move(connects));
  return job;
}

// `joiner` joins: every transport in `members` adds it, and it connects with
// `peers` (members, holes and itself), all at once.
void join(std::vector<Transport*> members, Transport& joiner, const std::vector<PeerInfo>& peers) {
  std::vector<std::function<void()>> calls;
  const PeerInfo joining = info_of(joiner);
  for (Transport* member : members) calls.push_back([member, joining] { member->add_peer(joining); });
  calls.push_back([&joiner, &peers] { joiner.connect(peers); });
  run_together(std::move(calls));
}

// From `from` to `to`: three messages on tag 1 (one chunked) and one on tag
// 2, half the receives posted before the sends and half after; each must
// arrive whole, in posting order per tag.
void exchange(Transport& from, Transport& to) {
  SCOPED_TRACE("rank " + std::to_string(from.rank()) + " -> rank " + std::to_string(to.rank()));
  const std::size_t sizes[] = {0, 3 * kChunkBytes + 5, 1000, 77};
  const Tag tags[] = {1, 1, 1, 2};
  std::vector<std::vector<unsigned char>> sent, received;
  for (int i = 0; i < 4; ++i) {
    sent.push_back(testing::byte_pattern(sizes[i], static_cast<std::uint64_t>(100 * from.rank() + 10 * to.rank() + i)));
    received.emplace_back(4 * kChunkBytes, 0);
  }
  std::vector<RequestPtr> receives(4), sends;
  for (int i : {0, 3}) receives[i] = to.irecv(from.rank(), tags[i], received[i].data(), received[i].size());
  for (int i = 0; i < 4; ++i) sends.push_back(from.isend(to.rank(), tags[i], sent[i].data(), sent[i].size()));
  for (int i : {1, 2}) receives[i] = to.irecv(from.rank(), tags[i], received[i].data(), received[i].size());
  ASSERT_TRUE(wait_all(sends, Clock::now() + kWait));
  ASSERT_TRUE(wait_all(receives, Clock::now() + kWait));
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(receives[i]->bytes(), sizes[i]) << "message " << i;
    received[i].resize(sizes[i]);
    EXPECT_TRUE(received[i] == sent[i]) << "message " << i << " differs";
  }
}

// The request fails with a PeerError naming `rank`, at once (well before
// any connect or network timeout).
void expect_fails_at_once(const RequestPtr& request, int rank) {
  const auto start = Clock::now();
  try {
    ASSERT_TRUE(request->wait_for(kWait));
    ADD_FAILURE() << "request to rank " << rank << " succeeded";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.rank(), rank) << e.what();
  }
  // Half the connect timeout (20 s): a failure that waited for it shows,
  // while a loaded machine's scheduling delays do not (docs/testing.md).
  EXPECT_LT(Clock::now() - start, 10s);
}

class JoinTest : public ::testing::TestWithParam<Backend> {};

TEST_P(JoinTest, JoinerExchangesWithEveryMember) {
  auto job = make_job(GetParam(), 3);
  exchange(*job[0], *job[1]);
  auto joiner = open_transport(GetParam(), 3, 4);
  std::vector<PeerInfo> peers{info_of(*job[0]), info_of(*job[1]), info_of(*job[2]), info_of(*joiner)};
  join({job[0].get(), job[1].get(), job[2].get()}, *joiner, peers);
  for (auto& member : job) EXPECT_EQ(member->size(), 4);
  EXPECT_EQ(joiner->size(), 4);
  for (auto& member : job) {
    exchange(*member, *joiner);
    exchange(*joiner, *member);
  }
  exchange(*job[2], *job[0]);  // the members' own links are untouched
}

TEST_P(JoinTest, JoinerFailsRequestsToARankLostBeforeIt) {
  auto job = make_job(GetParam(), 3);
  // Rank 1 is lost: the survivors are told (as the failure detector would)
  // and it goes away.
  for (int r : {0, 2}) job[r]->fail_peer(1, std::make_exception_ptr(PeerError(1, host_of(1), "lost")));
  job[1].reset();
  auto joiner = open_transport(GetParam(), 3, 4);
  std::vector<PeerInfo> peers{info_of(*job[0]), absent(1), info_of(*job[2]), info_of(*joiner)};
  join({job[0].get(), job[2].get()}, *joiner, peers);
  std::vector<unsigned char> buffer(16);
  expect_fails_at_once(joiner->isend(1, 1, buffer.data(), buffer.size()), 1);
  expect_fails_at_once(joiner->irecv(1, 1, buffer.data(), buffer.size()), 1);
  for (int r : {0, 2}) {
    exchange(*job[r], *joiner);
    exchange(*joiner, *job[r]);
  }
}

TEST_P(JoinTest, RanksSkippedByAJoinAreAbsent) {
  auto job = make_job(GetParam(), 2);
  // Rank 2 never arrives (it died while joining); rank 3 does.
  auto joiner = open_transport(GetParam(), 3, 4);
  std::vector<PeerInfo> peers{info_of(*job[0]), info_of(*job[1]), absent(2), info_of(*joiner)};
  join({job[0].get(), job[1].get()}, *joiner, peers);
  std::vector<unsigned char> buffer(16);
  for (auto& member : job) {
    EXPECT_EQ(member->size(), 4);
    expect_fails_at_once(member->isend(2, 1, buffer.data(), buffer.size()), 2);
    exchange(*member, *joiner);
  }
}

TEST_P(JoinTest, AddPeerOfAKnownRankIsRefused) {
  auto unconnected = open_transport(GetParam(), 0, 2);
  auto job = make_job(GetParam(), 3);
  auto refusal = [](Transport& t, const PeerInfo& peer) -> std::string {
    try {
      t.add_peer(peer);
    } catch (const FabricError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(refusal(*unconnected, info_of(*job[2])).find("before connect()"), std::string::npos);
  const std::string live = refusal(*job[0], info_of(*job[1]));
  EXPECT_NE(live.find("add_peer rank 1 (host-1)"), std::string::npos) << live;
  EXPECT_NE(live.find("is or was a member"), std::string::npos) << live;
  EXPECT_NE(refusal(*job[0], info_of(*job[0])).find("is or was a member"), std::string::npos);
  // A joined rank is a member too: adding it twice is refused.
  auto joiner = open_transport(GetParam(), 3, 4);
  std::vector<PeerInfo> peers{info_of(*job[0]), info_of(*job[1]), info_of(*job[2]), info_of(*joiner)};
  join({job[0].get(), job[1].get(), job[2].get()}, *joiner, peers);
  EXPECT_NE(refusal(*job[1], info_of(*joiner)).find("is or was a member"), std::string::npos);
  exchange(*job[1], *joiner);  // and the refusal changed nothing
}

INSTANTIATE_TEST_SUITE_P(Backends, JoinTest,
                         ::testing::Values(Backend{"asio", "asio", "auto"}, Backend{"tcp", "libfabric", "tcp"},
                                           Backend{"shm", "libfabric", "shm"},
                                           Backend{"per_link", "libfabric", "shm+tcp"},
                                           Backend{"shaped_asio", "asio", "auto", true}),
                         [](const auto& info) { return info.param.label; });

// The shaper gives a joined link what its config says for that rank: here
// an edge override that names rank 3 before it exists.
TEST(ShapedJoin, NewLinkFollowsTheConfig) {
  const Backend shaped{"shaped_asio", "asio", "auto", true};
  const auto config = shaper::parse_shaper_config("edge 0->3 lat=300ms\n", "join-test");
  auto job = make_job(shaped, 2, config);
  auto joiner = open_transport(shaped, 3, 4, config);
  std::vector<PeerInfo> peers{info_of(*job[0]), info_of(*job[1]), absent(2), info_of(*joiner)};
  join({job[0].get(), job[1].get()}, *joiner, peers);
  auto timed_send = [&](Transport& from, Transport& to) {
    std::vector<unsigned char> in(64), out(64);
    auto recv = to.irecv(from.rank(), 5, in.data(), in.size());
    const auto start = Clock::now();
    auto send = from.isend(to.rank(), 5, out.data(), out.size());
    EXPECT_TRUE(send->wait_for(kWait));
    EXPECT_TRUE(recv->wait_for(kWait));
    return Clock::now() - start;
  };
  EXPECT_GE(timed_send(*job[0], *joiner), 300ms);
  timed_send(*job[1], *joiner);  // the default: unshaped, but counted
  EXPECT_EQ(dynamic_cast<shaper::ShapedTransport&>(*job[0]).bytes_shaped(3), 64u);
  EXPECT_EQ(dynamic_cast<shaper::ShapedTransport&>(*job[1]).bytes_shaped(3), 64u);
}

}  // namespace
}  // namespace murmur::fabric
