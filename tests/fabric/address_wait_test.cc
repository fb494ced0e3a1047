// How a member waits for another's fabric address at start-up
// (group_detail::read_address): it gets the address when it comes, even
// after several of its wait slices; a rank that leaves or is lost before it
// publishes ends the wait at once, named, instead of at the join timeout;
// a rank that stays but never publishes times out as before.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "fabric/errors.h"
#include "fabric/group_internal.h"
#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/server.h"
#include "tests/support/wait.h"

namespace murmur::fabric {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kDeadline = 30s;

rendezvous::ServerOptions server_options() {
  rendezvous::ServerOptions o;
  o.bind_host = "127.0.0.1";
  o.token = "secret";
  return o;
}

rendezvous::ClientOptions client_options(const rendezvous::Server& server, int rank, int size) {
  rendezvous::ClientOptions o;
  o.server_port = server.port();
  o.token = "secret";
  o.rank = rank;
  o.size = size;
  o.self_host = "host" + std::to_string(rank);
  o.heartbeat_interval = 100ms;
  o.connect_timeout = kDeadline;
  return o;
}

// Both clients joined and both hold view 0.
void wait_for_view(rendezvous::Client& a, rendezvous::Client& b) {
  murmur::testing::wait_for([&] { return a.view().members.size() == 2 && b.view().members.size() == 2; }, kDeadline);
  ASSERT_EQ(a.view().members.size(), 2u);
}

TEST(AddressWait, AnAddressPublishedAfterSeveralSlicesArrives) {
  rendezvous::Server server(server_options());
  rendezvous::Client a(client_options(server, 0, 2));
  rendezvous::Client b(client_options(server, 1, 2));
  wait_for_view(a, b);
  std::thread late([&] {
    std::this_thread::sleep_for(1200ms);  // longer than two of read_address's slices
    b.set(group_detail::kAddressKeyPrefix + "1", std::string(1, group_detail::kAddressFollows) + "tcp://b");
  });
  EXPECT_EQ(group_detail::read_address(a, 1, "host1", kDeadline), "tcp://b");
  late.join();
}

TEST(AddressWait, ARankThatLeavesBeforePublishingEndsTheWaitNamingIt) {
  rendezvous::Server server(server_options());
  rendezvous::Client a(client_options(server, 0, 2));
  rendezvous::Client b(client_options(server, 1, 2));
  wait_for_view(a, b);
  b.leave();
  const auto start = Clock::now();
  try {
    group_detail::read_address(a, 1, "host1", kDeadline);
    FAIL() << "read_address returned for a rank that left";
  } catch (const PeerError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1"), std::string::npos) << what;
    EXPECT_NE(what.find("host1"), std::string::npos) << what;
    EXPECT_NE(what.find("left or was lost before it published its fabric address"), std::string::npos) << what;
  }
  // At a slice or two, not at the join timeout.
  EXPECT_LT(Clock::now() - start, kDeadline / 2);
}

TEST(AddressWait, ARankThatStaysButNeverPublishesTimesOut) {
  rendezvous::Server server(server_options());
  rendezvous::Client a(client_options(server, 0, 2));
  rendezvous::Client b(client_options(server, 1, 2));
  wait_for_view(a, b);
  const auto start = Clock::now();
  try {
    group_detail::read_address(a, 1, "host1", 1300ms);
    FAIL() << "read_address returned an address nobody published";
  } catch (const PeerError& e) {
    FAIL() << "a rank in the view was reported: " << e.what();
  } catch (const FabricError& e) {
    EXPECT_NE(
        std::string(e.what()).find("rank 1 (host1) did not publish its fabric address ('murmur/fabric-address/1') "
                                   "within 1300 ms"),
        std::string::npos)
        << e.what();
  }
  EXPECT_GE(Clock::now() - start, 1300ms);
}

}  // namespace
}  // namespace murmur::fabric
