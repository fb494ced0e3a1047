// A member whose own process stalls (stopped, or a host that froze for
// seconds) must not take the time it did not run for the server's silence:
// waking, it would fail over, close its connection, and be declared lost by a
// server that was answering all along. The soak (docs/testing.md, "Soak")
// lost whole jobs to this on an overloaded VM: every peer stalled ~3 s at
// once, every client "found" the server silent, every member was dropped.
// The same holds for a server whose process stalls: waking, it must read
// the heartbeats waiting in its sockets before it judges anyone silent.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/server.h"
#include "tests/support/forked_child.h"
#include "tests/support/wait.h"

namespace murmur::fabric::rendezvous {
namespace {

using namespace std::chrono_literals;

ClientOptions options(std::uint16_t port, int rank) {
  ClientOptions o;
  o.server_port = port;
  o.token = "secret";
  o.rank = rank;
  o.size = 2;
  o.self_host = "host" + std::to_string(rank);
  o.heartbeat_interval = 100ms;  // server counted silent after 6 x: 600 ms
  return o;
}

TEST(RendezvousStall, AMemberStoppedLongerThanItsServerDeadlineStaysAMember) {
  // Forked before any thread starts (tests/support/forked_child.h); the
  // port comes through the socket pair.
  murmur::testing::ForkedChild child([](int fd) {
    const auto port = murmur::testing::receive_port(fd);
    if (!port) return 4;
    try {
      Client c(options(*port, 1));
      c.set("child/up", "1");
      c.wait("parent/resumed", 30s);  // stopped and continued in here
      c.set("child/awake", "1");
      c.leave();
    } catch (...) {
      return 3;  // "not a member": it was declared lost
    }
    return 0;
  });
  ServerOptions so;
  so.bind_host = "127.0.0.1";
  so.token = "secret";
  so.heartbeat_timeout = 5000ms;  // the stop below stays well inside it
  Server server(so);
  std::mutex mu;
  std::vector<MemberLost> lost;
  Client parent(options(server.port(), 0));
  parent.on_member_lost([&](const MemberLost& m) {
    std::lock_guard<std::mutex> lock(mu);
    lost.push_back(m);
  });
  ASSERT_TRUE(murmur::testing::send_port(child.fd(), server.port()));
  ASSERT_EQ(parent.wait("child/up", 30s), "1");
  // 1.5 s: more than twice the child's 600 ms deadline for the server's
  // answers, a third of the server's 5 s for the child's heartbeats.
  ASSERT_EQ(::kill(child.pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(1500ms);
  ASSERT_EQ(::kill(child.pid(), SIGCONT), 0);
  parent.set("parent/resumed", "1");
  EXPECT_EQ(parent.wait("child/awake", 30s), "1");
  const int status = child.wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  // Its clean leave is reported; nothing else may be.
  ASSERT_TRUE(murmur::testing::wait_for(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return !lost.empty();
      },
      10s))
      << "no report of the child's leave";
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].rank, 1);
  EXPECT_TRUE(lost[0].left_cleanly) << "declared lost: " << lost[0].reason;
}

TEST(RendezvousStall, AServerStoppedLongerThanItsHeartbeatTimeoutKeepsItsMembers) {
  // The server runs in a child forked before any thread starts
  // (tests/support/forked_child.h); its port comes back through the pair.
  murmur::testing::ForkedChild child([](int fd) {
    ServerOptions so;
    so.bind_host = "127.0.0.1";
    so.token = "secret";
    so.heartbeat_timeout = 1000ms;  // the stop below is twice as long
    Server server(so);
    if (!murmur::testing::send_port(fd, server.port())) return 4;
    for (;;) ::pause();  // until the parent kills it
  });
  const auto port = murmur::testing::receive_port(child.fd());
  ASSERT_TRUE(port.has_value());

  // The members heartbeat every 100 ms and give the server 20 s before
  // they fail over: any loss below is the server's verdict. `lost` and its
  // mutex are declared first so that they outlive the clients, whose
  // threads may still report a loss while they are destroyed.
  std::mutex mu;
  std::vector<MemberLost> lost;
  std::vector<std::unique_ptr<Client>> members;
  for (int rank = 0; rank < 2; ++rank) {
    ClientOptions o = options(*port, rank);
    o.heartbeat_stale = 20s;
    members.push_back(std::make_unique<Client>(o));
    members.back()->on_member_lost([&](const MemberLost& m) {
      std::lock_guard<std::mutex> lock(mu);
      lost.push_back(m);
    });
  }
  ASSERT_TRUE(murmur::testing::wait_for(
      [&] { return members[0]->view().members.size() == 2 && members[1]->view().members.size() == 2; }, 30s));

  ASSERT_EQ(::kill(child.pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(2000ms);  // twice the server's heartbeat_timeout
  ASSERT_EQ(::kill(child.pid(), SIGCONT), 0);

  // Both are still members: they meet at a barrier, in view 0.
  std::string other_error;
  std::thread other([&] {
    try {
      members[1]->barrier("after the stop", 30s);
    } catch (const std::exception& e) {
      other_error = e.what();
    }
  });
  EXPECT_NO_THROW(members[0]->barrier("after the stop", 30s));
  other.join();
  EXPECT_EQ(other_error, "");
  EXPECT_EQ(members[0]->view().generation, 0u);
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& m : lost) ADD_FAILURE() << "rank " << m.rank << " reported lost: " << m.reason;
}

}  // namespace
}  // namespace murmur::fabric::rendezvous
