// Group::join_running on real loopback transports (asio, libfabric tcp) and
// an in-process rendezvous server: three members run, a fourth joins with a
// new id and every member's on_view reports it; messages flow both ways; a
// member is lost and the joiner sees the view without it; a lost rank comes
// back as a new process with a new id; a joiner with a different job
// signature is refused, naming the key, on both sides.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "fabric/errors.h"
#include "fabric/group.h"
#include "fabric/rendezvous/server.h"
#include "tests/support/wait.h"

namespace murmur::fabric {
namespace {

using namespace std::chrono_literals;

struct Backend {
  std::string label;
  std::string backend;
  std::string provider;
  // Ranks on two emulated machines by parity (GroupOptions::machine), in a
  // job that does not survive lost peers: "auto" then opens per-link
  // transports (shm to the same machine, tcp to the other) and a joiner
  // must open one too.
  bool two_machines = false;
};
void PrintTo(const Backend& backend, std::ostream* os) { *os << backend.label; }

constexpr char kSignature[] = "build=abc;wire=3;period=4";

// Records the views a Group reports; lets the test wait for one. The
// callback shares ownership, so the log outlives whichever Group calls it.
class ViewLog {
 public:
  static std::shared_ptr<ViewLog> of(Group& group) {
    auto log = std::make_shared<ViewLog>();
    group.on_view([log](const MembershipView& v, const std::vector<Group::LostPeer>&) {
      std::lock_guard lock(log->mutex_);
      log->views_.push_back(v);
      log->cv_.notify_all();
    });
    return log;
  }
  std::optional<MembershipView> wait_for(const std::function<bool(const MembershipView&)>& match) {
    std::unique_lock lock(mutex_);
    std::optional<MembershipView> found;
    cv_.wait_for(lock, 30s, [&] {
      for (const auto& v : views_)
        if (match(v)) found = v;
      return found.has_value();
    });
    return found;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<MembershipView> views_;
};

bool has_member(const MembershipView& v, int rank) {
  for (const auto& m : v.members)
    if (m.rank == rank) return true;
  return false;
}

class JoinRunning : public ::testing::TestWithParam<Backend> {
 protected:
  JoinRunning() {
    rendezvous::ServerOptions s;
    s.bind_host = "127.0.0.1";
    s.token = "secret";
    server_ = std::make_unique<rendezvous::Server>(s);
  }

  GroupOptions options(int rank, int size, const std::string& signature = kSignature) const {
    GroupOptions o;
    o.rank = rank;
    o.size = size;
    o.rendezvous_port = server_->port();
    o.token = "secret";
    o.self_host = "127.0.0.1";
    o.standby_bind_host = "127.0.0.1";
    o.transport.backend = GetParam().backend;
    o.transport.provider = GetParam().provider;
    o.transport.connect_timeout = 20s;
    o.heartbeat_interval = 200ms;
    o.join_timeout = 30s;
    o.job_signature = signature;
    if (GetParam().two_machines) {
      o.machine = rank % 2 == 0 ? "machine-even" : "machine-odd";  // the joiners (rank -1) are odd
      o.transport.loss_tolerant = false;
      o.transport.bind_host = "127.0.0.1";
    }
    return o;
  }

  // A job of `size` members, joined together (each join waits for all).
  std::vector<std::unique_ptr<Group>> start_job(int size) const {
    std::vector<std::future<std::unique_ptr<Group>>> starting;
    for (int r = 0; r < size; ++r) {
      starting.push_back(std::async(std::launch::async, [this, r, size] { return Group::join(options(r, size)); }));
    }
    std::vector<std::unique_ptr<Group>> members;
    for (auto& s : starting) members.push_back(s.get());
    return members;
  }

  // One message each way between a and b (tags distinct per pair).
  static void exchange(Group& a, Group& b) {
    const Tag tag = 1000 + static_cast<Tag>(a.rank()) * 100 + static_cast<Tag>(b.rank());
    std::uint64_t to_b = 0xA000 + a.rank(), to_a = 0xB000 + b.rank(), got_b = 0, got_a = 0;
    auto rb = b.transport().irecv(a.rank(), tag, &got_b, sizeof got_b);
    auto ra = a.transport().irecv(b.rank(), tag, &got_a, sizeof got_a);
    auto sa = a.transport().isend(b.rank(), tag, &to_b, sizeof to_b);
    auto sb = b.transport().isend(a.rank(), tag, &to_a, sizeof to_a);
    for (auto* r : {&rb, &ra, &sa, &sb}) ASSERT_TRUE((*r)->wait_for(20s)) << a.rank() << " <-> " << b.rank();
    EXPECT_EQ(got_b, to_b);
    EXPECT_EQ(got_a, to_a);
  }

  // Every Group reaches `name` (the rendezvous orders sends after the join).
  static void barrier_all(const std::vector<Group*>& groups, const std::string& name) {
    std::vector<std::future<void>> done;
    for (Group* g : groups) done.push_back(std::async(std::launch::async, [g, name] { g->barrier(name, 30s); }));
    for (auto& d : done) d.get();
  }

  std::unique_ptr<rendezvous::Server> server_;
};

TEST_P(JoinRunning, JoinerGetsNewIdAndTalksWithEveryone) {
  auto members = start_job(3);
  std::vector<std::shared_ptr<ViewLog>> logs;
  for (auto& m : members) logs.push_back(ViewLog::of(*m));
  const std::uint64_t g0 = members[0]->view().generation;

  auto joiner = Group::join_running(options(-1, 0));
  ASSERT_EQ(joiner->rank(), 3);
  EXPECT_EQ(joiner->view().generation, g0 + 1);
  EXPECT_EQ(joiner->view().joined, std::vector<int>{3});
  for (auto& log : logs) {
    auto v = log->wait_for([](const MembershipView& v) { return v.joined == std::vector<int>{3}; });
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->generation, g0 + 1);
    EXPECT_TRUE(has_member(*v, 3));
  }
  for (auto& m : members) {
    ASSERT_EQ(m->peers().size(), 4u);
    EXPECT_EQ(m->peers()[3].rank, 3);
  }
  barrier_all({members[0].get(), members[1].get(), members[2].get(), joiner.get()}, "test/joined");
  for (auto& m : members) exchange(*m, *joiner);
  if (GetParam().two_machines) {
    for (Group* g : {members[0].get(), members[1].get(), members[2].get(), joiner.get()})
      EXPECT_EQ(g->transport().name(), "libfabric:shm+tcp") << "rank " << g->rank();
  }

  // Member 1 is lost (declared on a transport error): the joiner sees it go.
  auto joiner_log = ViewLog::of(*joiner);
  EXPECT_EQ(members[0]->suspect(1, Group::Evidence::kTransportError, "test kills it"),
            Group::SuspectVerdict::kDeclared);
  auto without = joiner_log->wait_for([](const MembershipView& v) { return !has_member(v, 1); });
  ASSERT_TRUE(without.has_value());
  EXPECT_TRUE(has_member(*without, 3));
  members[1].reset();

  // Rank 1 comes back as a new process: a new id, never 1 again.
  auto again = Group::join_running(options(1, 3));
  ASSERT_EQ(again->rank(), 4);
  EXPECT_EQ(again->peers()[1].rank, -1);  // absent: lost before it joined
  barrier_all({members[0].get(), members[2].get(), joiner.get(), again.get()}, "test/rejoined");
  exchange(*members[0], *again);
  exchange(*members[2], *again);
  exchange(*joiner, *again);
  exchange(*members[0], *joiner);
}

TEST_P(JoinRunning, DifferentSignatureIsRefusedOnBothSides) {
  auto members = start_job(2);

  try {
    Group::join_running(options(-1, 0, "build=abc;wire=3;period=2"));
    FAIL() << "a joiner with period=2 joined a job with period=4";
  } catch (const FabricError& e) {
    EXPECT_NE(std::string(e.what()).find("job has period=4, joiner has period=2"), std::string::npos) << e.what();
  }
  for (auto& m : members) {
    ASSERT_TRUE(testing::wait_for([&] { return !m->control().refused_joins().empty(); }, 10s));
    EXPECT_NE(m->control().refused_joins().front().find("job has period=4, joiner has period=2"), std::string::npos);
  }
  EXPECT_EQ(members[0]->view().members.size(), 2u);
}

// An owner clears its callback and frees what the callback uses (the
// Peer's Membership does so when a Peer is destroyed while a view that
// expels it is being handled): on_view must not return while the old
// callback still runs. It did, and a Python worker interrupted at that
// moment jumped into freed memory.
TEST_P(JoinRunning, ReplacingTheCallbackWaitsForTheRunInProgress) {
  auto members = start_job(2);

  std::promise<void> entered;
  std::atomic<bool> first_run{true};
  std::atomic<bool> finished{false};
  // The join may bring more than one view: only the first run signals.
  members[0]->on_view([&](const MembershipView&, const std::vector<Group::LostPeer>&) {
    if (first_run.exchange(false)) entered.set_value();
    // Long enough that an on_view that does not wait returns well before.
    std::this_thread::sleep_for(500ms);
    finished = true;
  });
  auto joiner = Group::join_running(options(-1, 0));  // a new view for member 0's callback
  ASSERT_EQ(entered.get_future().wait_for(30s), std::future_status::ready);
  members[0]->on_view(nullptr);
  EXPECT_TRUE(finished) << "on_view returned while the replaced callback was still running";
}

INSTANTIATE_TEST_SUITE_P(Backends, JoinRunning,
                         ::testing::Values(Backend{"asio", "asio", ""}, Backend{"libfabric_tcp", "libfabric", "tcp"},
                                           Backend{"per_link", "libfabric", "auto", true}),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace murmur::fabric
