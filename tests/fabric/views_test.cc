// Membership views, suspicion and failover of the rendezvous control plane,
// on real servers and clients over loopback (and a forked, stopped child).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fabric/errors.h"
#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/server.h"
#include "fabric/rendezvous/wire.h"
#include "tests/support/forked_child.h"
#include "tests/support/wait.h"

namespace murmur::fabric::rendezvous {
namespace {

using namespace std::chrono_literals;

ServerOptions server_options() {
  ServerOptions o;
  o.bind_host = "127.0.0.1";
  o.token = "secret";
  o.heartbeat_timeout = 30000ms;  // only suspicion declares members here
  o.heartbeat_stale = 400ms;
  o.failover_grace = 3000ms;
  return o;
}

ClientOptions client_options(std::uint16_t port, int rank, int size) {
  ClientOptions o;
  o.server_port = port;
  o.token = "secret";
  o.rank = rank;
  o.size = size;
  o.self_host = "host" + std::to_string(rank);
  o.heartbeat_interval = 100ms;
  o.connect_timeout = 5000ms;
  o.request_timeout = 10000ms;
  return o;
}

// Records every view a client is told about; lets the test wait for one.
// The records live as long as the client's callback, not the ViewLog: a
// test's log may go before its client, whose last views (others leaving at
// the test's end) still arrive on the client's thread.
class ViewLog {
 public:
  explicit ViewLog(Client& client) {
    client.on_view([records = records_](const View& v, const std::vector<MemberLost>& lost) {
      {
        std::lock_guard lock(records->mutex);
        records->views.push_back({v, lost});
      }
      records->cv.notify_all();
    });
  }
  // The view of `generation`, with the members lost in it; nullopt after 5 s.
  std::optional<std::pair<View, std::vector<MemberLost>>> wait_for(std::uint64_t generation) {
    std::unique_lock lock(records_->mutex);
    std::optional<std::pair<View, std::vector<MemberLost>>> found;
    records_->cv.wait_for(lock, 5s, [&] {
      for (const auto& e : records_->views) {
        if (e.first.generation == generation) found = e;
      }
      return found.has_value();
    });
    return found;
  }
  std::vector<std::uint64_t> generations() {
    std::lock_guard lock(records_->mutex);
    std::vector<std::uint64_t> out;
    for (const auto& e : records_->views) out.push_back(e.first.generation);
    return out;
  }

 private:
  struct Records {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<std::pair<View, std::vector<MemberLost>>> views;
  };
  std::shared_ptr<Records> records_ = std::make_shared<Records>();
};

std::vector<int> ranks_of(const View& v) {
  std::vector<int> out;
  for (const auto& m : v.members) out.push_back(m.rank);
  return out;
}

// A member that joins over a raw socket and can vanish without a leave.
class RawMember {
 public:
  // `rejoin_view` not empty: a failover rejoin naming view 0 of those ranks.
  RawMember(std::uint16_t port, int rank, int size, const std::vector<int>& rejoin_view = {}) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    wire::Hello hello;
    hello.token = "secret";
    hello.rank = rank;
    hello.size = size;
    hello.host = "raw" + std::to_string(rank);
    hello.rejoin = !rejoin_view.empty();
    for (int r : rejoin_view) hello.members.push_back({r, "raw" + std::to_string(r)});
    const auto frame = wire::encode(wire::ClientMessage{hello});
    EXPECT_EQ(::write(fd_, frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  }
  ~RawMember() { vanish(); }
  // Closes without a leave, as a crashed process would.
  void vanish() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

TEST(Views, GenerationsCountChangesAndNameTheLost) {
  Server server(server_options());
  Client c0(client_options(server.port(), 0, 3));
  ViewLog log0(c0);
  Client c1(client_options(server.port(), 1, 3));
  ViewLog log1(c1);
  RawMember victim(server.port(), 2, 3);

  const auto first = log0.wait_for(0);
  ASSERT_TRUE(first.has_value()) << "no view 0 once all ranks joined";
  EXPECT_EQ(ranks_of(first->first), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(first->first.members[2].host, "raw2");
  EXPECT_EQ(server.generation(), 0u);

  victim.vanish();
  for (ViewLog* log : {&log0, &log1}) {
    const auto next = log->wait_for(1);
    ASSERT_TRUE(next.has_value()) << "no view 1 after rank 2's connection closed";
    EXPECT_EQ(ranks_of(next->first), (std::vector<int>{0, 1}));
    ASSERT_EQ(next->second.size(), 1u);
    EXPECT_EQ(next->second[0].rank, 2);
    EXPECT_FALSE(next->second[0].left_cleanly);
  }
  EXPECT_EQ(c1.view().generation, 1u);
  // Every member saw the same sequence.
  EXPECT_EQ(log0.generations(), log1.generations());

  // A barrier now counts the live members of the view.
  std::thread t1([&] { c1.barrier("after-loss", 30s); });
  EXPECT_NO_THROW(c0.barrier("after-loss", 30s));
  t1.join();
}

TEST(Views, SuspicionVerdicts) {
  // Rank 2 is a child process (forked before any thread exists:
  // tests/support/forked_child.h), so it can be stopped.
  murmur::testing::ForkedChild child([](int fd) {
    const auto port = murmur::testing::receive_port(fd);
    if (!port) return 4;
    new Client(client_options(*port, 2, 4));  // heartbeats until stopped; never destroyed
    for (;;) ::pause();
  });
  Server server(server_options());
  const std::uint16_t port = server.port();
  ASSERT_TRUE(murmur::testing::send_port(child.fd(), port));
  Client c0(client_options(port, 0, 4));
  ViewLog log0(c0);
  Client c1(client_options(port, 1, 4));
  RawMember rank3(port, 3, 4);
  ASSERT_TRUE(log0.wait_for(0).has_value());

  // Silent, but still heartbeating: keep waiting.
  EXPECT_EQ(c1.suspect(2, Evidence::kSilent, "no completion in 1 s"), SuspectVerdict::kAlive);
  // A transport error declares at once; a second suspicion finds it gone.
  EXPECT_EQ(c0.suspect(3, Evidence::kTransportError, "link reset"), SuspectVerdict::kDeclared);
  EXPECT_EQ(c1.suspect(3, Evidence::kTransportError, "link reset"), SuspectVerdict::kAlreadyLost);
  const auto after3 = log0.wait_for(1);
  ASSERT_TRUE(after3.has_value());
  EXPECT_EQ(ranks_of(after3->first), (std::vector<int>{0, 1, 2}));
  EXPECT_NE(after3->second.at(0).reason.find("suspected by rank 0"), std::string::npos) << after3->second.at(0).reason;

  // Stopped: its heartbeats age past heartbeat_stale and silence declares it.
  ASSERT_EQ(::kill(child.pid(), SIGSTOP), 0);
  EXPECT_TRUE(testing::wait_for(
      [&] { return c1.suspect(2, Evidence::kSilent, "no completion") == SuspectVerdict::kDeclared; }, 30s, 50ms));
  const auto after2 = log0.wait_for(2);
  ASSERT_TRUE(after2.has_value());
  EXPECT_EQ(ranks_of(after2->first), (std::vector<int>{0, 1}));

  // A rank that is not in the view (here: rank 3 coming back with the view it
  // last knew) is heard but cannot expel anyone.
  auto stale = client_options(port, 3, 4);
  stale.rejoin_view = View{0, {{0, "host0"}, {1, "host1"}, {2, "host2"}, {3, "raw3"}}};
  Client expelled(stale);
  EXPECT_EQ(expelled.suspect(0, Evidence::kTransportError, "woke up"), SuspectVerdict::kNotMember);
  EXPECT_THROW(expelled.set("k", "v"), FabricError);
  EXPECT_EQ(server.generation(), 2u);
  EXPECT_EQ(c0.view().members.size(), 2u);
}

// A job of four clients, each with its standby server, whose server dies.
struct FailoverJob {
  static constexpr int kSize = 4;
  std::unique_ptr<Server> primary = std::make_unique<Server>(server_options());
  std::vector<std::unique_ptr<Server>> standbys;
  // Before the clients: destroyed after them, so no view arrives at a dead log.
  std::vector<std::unique_ptr<ViewLog>> logs;
  std::vector<std::unique_ptr<Client>> clients;

  // `reaches(member, standby)`: false puts a partition between them (the
  // member is given a port nobody listens on for that standby).
  explicit FailoverJob(std::function<bool(int, int)> reaches = [](int, int) { return true; }) {
    for (int r = 0; r < kSize; ++r) standbys.push_back(std::make_unique<Server>(server_options()));
    for (int r = 0; r < kSize; ++r) {
      std::vector<std::pair<int, Endpoint>> endpoints;
      for (int s = 0; s < kSize; ++s) {
        const std::uint16_t port = reaches(r, s) ? standbys[s]->port() : kRefusingPort;
        endpoints.push_back({s, Endpoint{"127.0.0.1", port}});
      }
      auto o = client_options(primary->port(), r, kSize);
      o.failover_connect_timeout = 1000ms;
      clients.push_back(std::make_unique<Client>(o));
      logs.push_back(std::make_unique<ViewLog>(*clients.back()));
      clients.back()->set_standbys(endpoints);
    }
  }
  // A privileged port no test server binds: connecting is refused at once.
  static constexpr std::uint16_t kRefusingPort = 1;

  // True once every client holds view 0 (its push may precede on_view).
  bool started() {
    return testing::wait_for(
        [&] {
          for (auto& c : clients) {
            if (c->view().members.size() != kSize) return false;
          }
          return true;
        },
        5s);
  }
};

TEST(Failover, ControlPlaneSurvivesTheServer) {
  FailoverJob job;
  ASSERT_TRUE(job.started());
  job.clients[0]->set("before", "a");
  job.clients[0]->set("g0", "x0");
  job.clients[1]->set("g1", "x1");

  // A gather in progress when the server dies completes on the successor.
  std::vector<std::string> gathered;
  std::thread gatherer([&] { gathered = job.clients[1]->gather("g", 4, 10000ms); });
  std::string waited;
  std::thread waiter([&] { waited = job.clients[2]->wait("late", 10000ms); });
  // Whether they reach the server before it dies or are sent to the
  // successor, the keys they need are set only after the failover.
  job.primary.reset();

  // Calls made right away ride the failover.
  job.clients[2]->set("g2", "x2");
  job.clients[3]->set("g3", "x3");
  job.clients[3]->set("late", "L");
  gatherer.join();
  waiter.join();
  EXPECT_EQ(gathered, (std::vector<std::string>{"x0", "x1", "x2", "x3"}));
  EXPECT_EQ(waited, "L");
  // Keys set before the failover were set again on the successor.
  EXPECT_EQ(job.clients[3]->get("before"), "a");
  EXPECT_EQ(job.standbys[0]->member_count(), 4u) << "rank 0's standby is the successor";

  // A barrier of everyone still completes.
  std::vector<std::thread> others;
  for (int r = 1; r < FailoverJob::kSize; ++r) {
    others.emplace_back([&, r] { job.clients[r]->barrier("after-failover", 10000ms); });
  }
  EXPECT_NO_THROW(job.clients[0]->barrier("after-failover", 10000ms));
  for (auto& t : others) t.join();

  // A later loss is still pushed to the survivors as a new view.
  const auto generation = job.clients[0]->view().generation;
  EXPECT_EQ(job.clients[0]->suspect(3, Evidence::kTransportError, "link reset"), SuspectVerdict::kDeclared);
  for (int r = 0; r < 3; ++r) {
    const auto next = job.logs[r]->wait_for(generation + 1);
    ASSERT_TRUE(next.has_value()) << "rank " << r << " saw no view after the loss";
    EXPECT_EQ(ranks_of(next->first), (std::vector<int>{0, 1, 2}));
  }
}

TEST(Failover, DeadSuccessorIsSkipped) {
  FailoverJob job;
  ASSERT_TRUE(job.started());
  // Rank 0's standby is gone (its member lives on), then the server: every
  // client, rank 0's included, moves on to rank 1's standby.
  job.standbys[0].reset();
  job.primary.reset();
  job.clients[0]->set("k", "v");
  EXPECT_EQ(job.clients[3]->wait("k", 10000ms), "v");
  EXPECT_TRUE(testing::wait_for([&] { return job.standbys[1]->member_count() == 4; }, 10s));
  EXPECT_EQ(job.clients[2]->view().members.size(), 4u);
}

// Quorum on one server: members are lost by suspicion, and the server
// publishes the view without them only if it hears from a quorum of the
// view after the loss (server_quorum.cc). The raw members stay connected
// and silent, as members beyond a partition do.
struct QuorumJob {
  Server server{server_options()};
  std::vector<std::unique_ptr<RawMember>> silent;
  std::vector<std::unique_ptr<ViewLog>> logs;  // before the clients: destroyed after them
  std::vector<std::unique_ptr<Client>> heard;

  // Ranks in `heard_ranks` are clients that heartbeat; the others of four
  // joined over raw sockets and say nothing more.
  explicit QuorumJob(const std::vector<int>& heard_ranks) {
    for (int r = 0; r < 4; ++r) {
      if (std::find(heard_ranks.begin(), heard_ranks.end(), r) == heard_ranks.end()) {
        silent.push_back(std::make_unique<RawMember>(server.port(), r, 4));
      } else {
        heard.push_back(std::make_unique<Client>(client_options(server.port(), r, 4)));
        logs.push_back(std::make_unique<ViewLog>(*heard.back()));
      }
    }
  }
};

TEST(Quorum, HalfTheViewWithItsLowestRankGoesOn) {
  QuorumJob job({0, 1});
  ASSERT_TRUE(job.logs[0]->wait_for(0).has_value());
  EXPECT_EQ(job.heard[0]->suspect(2, Evidence::kTransportError, "link reset"), SuspectVerdict::kDeclared);
  EXPECT_EQ(job.heard[1]->suspect(3, Evidence::kTransportError, "link reset"), SuspectVerdict::kDeclared);
  // Both losses wait for the same quorum and are published in one view.
  const auto after = job.logs[1]->wait_for(1);
  ASSERT_TRUE(after.has_value()) << "no view after the losses";
  EXPECT_EQ(ranks_of(after->first), (std::vector<int>{0, 1}));
  EXPECT_EQ(after->second.size(), 2u);
  EXPECT_EQ(job.server.member_count(), 2u);
  std::thread t1([&] { job.heard[1]->barrier("after", 30s); });
  EXPECT_NO_THROW(job.heard[0]->barrier("after", 30s));
  t1.join();
}

// Half without the lowest rank is the smaller side: the server stands
// down, telling its members they are out and why, and refuses later Hellos.
TEST(Quorum, AServerThatHearsTooFewAfterALossStandsDown) {
  QuorumJob job({2, 3});
  ASSERT_TRUE(job.logs[0]->wait_for(0).has_value());
  EXPECT_EQ(job.heard[0]->suspect(0, Evidence::kTransportError, "link reset"), SuspectVerdict::kDeclared);
  const auto out = job.logs[1]->wait_for(1);
  ASSERT_TRUE(out.has_value()) << "rank 3 was not told";
  // Every member it held is out, the silent rank 1 too: none of them can
  // show it is on the larger side.
  EXPECT_TRUE(out->first.members.empty()) << ranks_of(out->first).size() << " members left";
  ASSERT_EQ(out->second.size(), 4u);
  EXPECT_NE(out->second[0].reason.find("suspected by rank 2"), std::string::npos) << out->second[0].reason;
  EXPECT_NE(out->second[3].reason.find("the smaller side"), std::string::npos) << out->second[3].reason;
  EXPECT_EQ(job.server.member_count(), 0u);
  EXPECT_THROW(job.heard[1]->set("k", "v"), FabricError);
  // Its members coming back are refused; a new job may use the server.
  auto back = client_options(job.server.port(), 2, 4);
  back.rejoin_view = View{0, {{0, "raw0"}, {1, "raw1"}, {2, "host2"}, {3, "host3"}}};
  EXPECT_THROW(Client{back}, FabricError);
  Client next_job(client_options(job.server.port(), 0, 1));
  EXPECT_EQ(job.server.member_count(), 1u);
}

// A partition as the server dies: each side fails over to a standby it can
// reach. The side with half the view and its lowest rank goes on; the other
// side's standby stands down and its members are told they are out.
TEST(Failover, APartitionAsTheServerDiesLeavesOneSideGoingOn) {
  const auto same_side = [](int member, int standby) { return (member < 2) == (standby < 2); };
  FailoverJob job(same_side);
  ASSERT_TRUE(job.started());
  job.primary.reset();
  const auto kept = job.logs[1]->wait_for(1);
  ASSERT_TRUE(kept.has_value()) << "the side with rank 0 saw no view after the grace";
  EXPECT_EQ(ranks_of(kept->first), (std::vector<int>{0, 1}));
  job.clients[0]->set("k", "v");
  EXPECT_EQ(job.clients[1]->get("k"), "v");
  for (int r : {2, 3}) {
    const auto out = job.logs[r]->wait_for(1);
    ASSERT_TRUE(out.has_value()) << "rank " << r << " was not told";
    EXPECT_EQ(ranks_of(out->first), (std::vector<int>{0, 1}));
    ASSERT_FALSE(out->second.empty());
    EXPECT_NE(out->second.back().reason.find("the smaller side"), std::string::npos) << out->second.back().reason;
    EXPECT_THROW(job.clients[r]->set("k", "w"), FabricError);
  }
  EXPECT_EQ(job.clients[0]->get("k"), "v");
}

// A member whose connection to a standby closes during the failover grace
// and that rejoins before it ends counts as rejoined. (A client whose
// heartbeats go unanswered for 600 ms closes its connection and reconnects:
// on a loaded host both members of the larger side of
// APartitionAsTheServerDiesLeavesOneSideGoingOn did, their standby held
// their rejoins to be from ranks the view had lost, counted 0 of 4 and
// stood down.)
TEST(Failover, AMemberThatReconnectsDuringTheGraceStillCounts) {
  ServerOptions o = server_options();
  o.failover_grace = 1500ms;
  Server standby(o);
  const std::vector<int> view{0, 1, 2, 3};
  RawMember rank0(standby.port(), 0, 4, view);
  auto rank1 = std::make_unique<RawMember>(standby.port(), 1, 4, view);
  ASSERT_TRUE(testing::wait_for([&] { return standby.member_count() == 2; }, 10s));
  rank1->vanish();
  ASSERT_TRUE(testing::wait_for([&] { return standby.member_count() == 1; }, 10s));
  rank1 = std::make_unique<RawMember>(standby.port(), 1, 4, view);
  EXPECT_TRUE(testing::wait_for([&] { return standby.member_count() == 2; }, 10s))
      << "rank 1's rejoin was not taken back into the view";
  // The grace ends with half the view and its lowest rank: the side goes on
  // without ranks 2 and 3 (view 1) instead of standing down.
  EXPECT_TRUE(testing::wait_for([&] { return standby.generation() == std::optional<std::uint64_t>(1); }, 10s));
  EXPECT_EQ(standby.member_count(), 2u);
}

}  // namespace
}  // namespace murmur::fabric::rendezvous
