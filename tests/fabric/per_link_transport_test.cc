// The per-link transport (per_link_transport.h) within one process: ranks
// told they run on two machines ("machine-a", "machine-b"; all really on
// this one) reach the ranks of their own machine over libfabric shm and the
// others over libfabric tcp on loopback, with the payloads intact; what
// `auto` opens for each locality; and what a peer's untrusted address can do
// (nothing but a PeerError naming it). Joining over per-link transports is
// in join_test.cc (its per_link case).
#include "fabric/per_link_transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "fabric/errors.h"
#include "fabric/libfabric/transport.h"
#include "fabric/transport_options.h"
#include "tests/support/byte_pattern.h"

namespace murmur::fabric {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 60s;

TransportOptions options_for(int rank, int size, const std::string& machine, const std::string& provider) {
  TransportOptions options;
  options.provider = provider;
  options.rank = rank;
  options.size = size;
  options.machine = machine;
  options.bind_host = "127.0.0.1";
  options.chunk_bytes = std::size_t{256} << 10;  // the 1 MiB message below goes as 4 chunks
  options.connect_timeout = 20s;
  return options;
}

std::string host_of(int rank) { return "host-" + std::to_string(rank); }

// Opens one transport per entry of `machines` and connects them all.
std::vector<std::unique_ptr<Transport>> make_job(const std::vector<std::string>& machines,
                                                 const std::string& provider = "shm+tcp") {
  const int size = static_cast<int>(machines.size());
  std::vector<std::unique_ptr<Transport>> job;
  std::vector<PeerInfo> peers;
  for (int r = 0; r < size; ++r) {
    job.push_back(make_transport(options_for(r, size, machines[r], provider)));
    peers.push_back(PeerInfo{r, host_of(r), job.back()->address()});
  }
  std::vector<std::future<void>> connects;
  for (auto& t : job) connects.push_back(std::async(std::launch::async, [&t, &peers] { t->connect(peers); }));
  for (auto& c : connects) c.get();
  return job;
}

// One small and one chunked message from `from` to `to`, checked byte for byte.
void exchange(Transport& from, Transport& to) {
  SCOPED_TRACE("rank " + std::to_string(from.rank()) + " -> rank " + std::to_string(to.rank()));
  for (const std::size_t bytes : {std::size_t{8}, std::size_t{1} << 20}) {
    const auto sent = testing::byte_pattern(bytes, static_cast<std::uint64_t>(10 * from.rank() + to.rank()) + bytes);
    std::vector<unsigned char> received(bytes + 16);
    auto receive = to.irecv(from.rank(), 7, received.data(), received.size());
    auto send = from.isend(to.rank(), 7, sent.data(), sent.size());
    ASSERT_TRUE(send->wait_for(kWait));
    ASSERT_TRUE(receive->wait_for(kWait));
    ASSERT_EQ(receive->bytes(), bytes);
    received.resize(bytes);
    EXPECT_TRUE(received == sent);
  }
}

std::string link_of(Transport& from, int to) {
  auto* per_link = dynamic_cast<PerLinkTransport*>(&from);
  return per_link == nullptr ? "not per-link" : per_link->link_name(to);
}

TEST(PerLinkTransport, EachPairTalksOverItsMachinesLink) {
  auto job = make_job({"machine-a", "machine-a", "machine-b", "machine-b"});
  for (auto& t : job) EXPECT_EQ(t->name(), "libfabric:shm+tcp");
  for (int from = 0; from < 4; ++from) {
    for (int to = 0; to < 4; ++to) {
      if (from == to) continue;
      const bool same_machine = from / 2 == to / 2;
      EXPECT_EQ(link_of(*job[from], to), same_machine ? "libfabric:shm" : "libfabric:tcp") << from << " -> " << to;
      exchange(*job[from], *job[to]);
    }
  }
}

TEST(PerLinkTransport, AutoOpensOneOnlyWhenSomeButNotAllRanksShareAMachine) {
  if (libfabric::verbs_available()) GTEST_SKIP() << "an RDMA device is present: auto picks verbs";
  auto name_for = [](bool all_here, bool shared, bool loss_tolerant) {
    auto options = options_for(0, 2, "machine-a", "auto");
    options.peers_on_this_host = all_here;
    options.ranks_share_machines = shared;
    options.loss_tolerant = loss_tolerant;
    if (all_here) options.bind_host.clear();
    return make_transport(options)->name();
  };
  EXPECT_EQ(name_for(false, true, false), "libfabric:shm+tcp");
  EXPECT_EQ(name_for(true, true, false), "libfabric:shm");
  EXPECT_EQ(name_for(false, false, false), "libfabric:tcp");
  // shm is never chosen for a job that survives lost peers (transport_options.h).
  EXPECT_EQ(name_for(false, true, true), "libfabric:tcp");
}

TEST(PerLinkTransport, AnUnknownPairIsRefusedByName) {
  for (const std::string provider : {"tcp+shm", "shm+asio", "shm+"}) {
    try {
      make_transport(options_for(0, 1, "machine-a", provider));
      ADD_FAILURE() << provider << " was accepted";
    } catch (const FabricError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + provider + "'"), std::string::npos) << e.what();
    }
  }
  auto asio = options_for(0, 1, "machine-a", "shm+tcp");
  asio.backend = "asio";
  EXPECT_THROW(make_transport(asio), FabricError);
}

// What connect() on `own` (rank 0 of 2) says when rank 1 published
// `address`. A refused connect() changes nothing, so `own` serves again.
std::string connect_error(Transport& own, const std::string& address) {
  try {
    own.connect({PeerInfo{0, host_of(0), own.address()}, PeerInfo{1, host_of(1), address}});
  } catch (const PeerError& e) {
    return e.what();
  }
  return "connected";
}

TEST(PerLinkTransport, AMalformedAddressFailsConnectNamingTheRank) {
  auto other = make_transport(options_for(1, 2, "machine-b", "shm+tcp"));
  const std::string good = other->address();
  // Every cut of a valid record, a byte more, and a plain tcp address.
  std::vector<std::string> bad;
  for (std::size_t n = 1; n < good.size(); ++n) bad.push_back(good.substr(0, n));
  bad.push_back(good + "x");
  auto plain = options_for(1, 2, "machine-b", "tcp");
  bad.push_back(make_transport(plain)->address());
  auto own = make_transport(options_for(0, 2, "machine-a", "shm+tcp"));
  for (const auto& address : bad) {
    const std::string error = connect_error(*own, address);
    EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
    EXPECT_NE(error.find("host-1"), std::string::npos) << error;
    EXPECT_NE(error.find("not a per-link one"), std::string::npos) << error;
  }
  // A length field that claims more than the record holds.
  std::string lying = good;
  lying[4] = static_cast<char>(0xff);
  lying[5] = static_cast<char>(0xff);
  EXPECT_NE(connect_error(*own, lying).find("not a per-link one"), std::string::npos);
}

TEST(PerLinkTransport, APeerOfAnotherPairIsRefusedNamingBoth) {
  auto other = make_transport(options_for(1, 2, "machine-b", "shm+net"));
  auto own = make_transport(options_for(0, 2, "machine-a", "shm+tcp"));
  const std::string error = connect_error(*own, other->address());
  EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
  EXPECT_NE(error.find("libfabric:net"), std::string::npos) << error;
  EXPECT_NE(error.find("libfabric:tcp"), std::string::npos) << error;
}

TEST(PerLinkTransport, ALostPeerFailsOnlyItsOwnLink) {
  auto job = make_job({"machine-a", "machine-a", "machine-b"});
  job[0]->fail_peer(2, std::make_exception_ptr(PeerError(2, host_of(2), "lost")));
  std::vector<unsigned char> buffer(8);
  auto to_lost = job[0]->isend(2, 1, buffer.data(), buffer.size());
  try {
    to_lost->wait_for(kWait);
    ADD_FAILURE() << "a send to the lost rank succeeded";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.rank(), 2);
  }
  exchange(*job[0], *job[1]);
  exchange(*job[1], *job[0]);
  exchange(*job[1], *job[2]);
}

}  // namespace
}  // namespace murmur::fabric
