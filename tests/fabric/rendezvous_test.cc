// The rendezvous control plane: key/value, barriers and membership among
// several clients; refusals; hostile input on raw sockets; failure detection.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
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
using Clock = std::chrono::steady_clock;

// How long a test waits for something that must happen: it bounds a hang on a
// loaded machine, it does not measure (docs/testing.md, "Waiting in tests").
constexpr auto kDeadline = 30s;

ServerOptions server_options(std::chrono::milliseconds heartbeat_timeout = 2000ms) {
  ServerOptions o;
  o.bind_host = "127.0.0.1";
  o.token = "secret";
  o.heartbeat_timeout = heartbeat_timeout;
  return o;
}

ClientOptions client_options(std::uint16_t server_port, int rank, int size,
                             std::chrono::milliseconds heartbeat_interval = 100ms) {
  ClientOptions o;
  o.server_port = server_port;
  o.token = "secret";
  o.rank = rank;
  o.size = size;
  o.self_host = "host" + std::to_string(rank);
  o.heartbeat_interval = heartbeat_interval;
  o.connect_timeout = kDeadline;
  return o;
}

ClientOptions client_options(const Server& server, int rank, int size,
                             std::chrono::milliseconds heartbeat_interval = 100ms) {
  return client_options(server.port(), rank, size, heartbeat_interval);
}

// Collects MemberLost callbacks and lets the test wait for one.
class LostLog {
 public:
  std::function<void(const MemberLost&)> callback() {
    return [this](const MemberLost& m) {
      {
        std::lock_guard lock(mutex_);
        events_.push_back(m);
      }
      cv_.notify_all();
    };
  }
  // The first event about `rank`, or nullopt after `timeout`.
  std::optional<MemberLost> wait_for(int rank, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    std::optional<MemberLost> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& e : events_) {
        if (e.rank == rank) {
          found = e;
          return true;
        }
      }
      return false;
    });
    return found;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<MemberLost> events_;
};

// A plain TCP socket to the server, for sending what no Client would.
class RawSocket {
 public:
  explicit RawSocket(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ADD_FAILURE() << "connect: " << std::strerror(errno);
    }
  }
  ~RawSocket() { close(); }

  void send(const void* data, std::size_t n) { ASSERT_EQ(::send(fd_, data, n, MSG_NOSIGNAL), ssize_t(n)); }
  void send(const std::vector<std::byte>& frame) { send(frame.data(), frame.size()); }
  void send_prefix(std::uint32_t n) {
    const unsigned char p[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
    send(p, 4);
  }
  // True when the server closes its end (EOF or reset) within `timeout`;
  // whatever it sends before is discarded.
  bool closed_by_server(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    char buf[4096];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left <= 0ms) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }
  // Reads one server frame (blocking).
  wire::ServerMessage read_message() {
    unsigned char p[4];
    read_exact(p, 4);
    const std::uint32_t n = p[0] | p[1] << 8 | p[2] << 16 | std::uint32_t(p[3]) << 24;
    std::vector<std::uint64_t> words((n + 7) / 8);
    read_exact(words.data(), n);
    return wire::decode_server(words, 1 << 20);
  }
  // Closes with a reset, as a crashed process's kernel would not, but as
  // abruptly as a socket can go.
  void abort() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  void read_exact(void* data, std::size_t n) {
    auto* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t got = ::recv(fd_, p, n, 0);
      ASSERT_GT(got, 0) << "server closed the raw socket";
      p += got;
      n -= static_cast<std::size_t>(got);
    }
  }
  int fd_ = -1;
};

// rejected_count() moves on the server's thread; give it a moment.
bool rejected_reaches(const Server& server, std::size_t n) {
  return murmur::testing::wait_for([&] { return server.rejected_count() >= n; }, kDeadline);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FabricError& e) {
    return e.what();
  }
  return "(no FabricError)";
}

TEST(Rendezvous, FourClientsSetGetWaitBarrierMembers) {
  Server server(server_options());
  constexpr int kSize = 4;
  std::vector<std::string> failures(kSize);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kSize; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        Client client(client_options(server, rank, kSize));
        // Values are bytes, NULs included.
        client.set("addr/" + std::to_string(rank), std::string("fi\0addr", 7) + std::to_string(rank));
        client.barrier("published", kDeadline);
        for (int other = 0; other < kSize; ++other) {
          const auto v = client.get("addr/" + std::to_string(other));
          if (!v || *v != std::string("fi\0addr", 7) + std::to_string(other)) {
            throw std::runtime_error("bad value for rank " + std::to_string(other));
          }
        }
        if (client.get("missing")) throw std::runtime_error("missing key found");
        if (rank == 0) {
          // Not a wait: a late setter, so that the others' wait() usually
          // blocks; the test holds whichever comes first.
          std::this_thread::sleep_for(50ms);
          client.set("late", "v");
        } else if (client.wait("late", kDeadline) != "v") {
          throw std::runtime_error("wait returned the wrong value");
        }
        const auto members = client.members();
        if (members.size() != kSize) throw std::runtime_error("members: " + std::to_string(members.size()));
        for (int i = 0; i < kSize; ++i) {
          if (members[i].rank != i || members[i].host != "host" + std::to_string(i)) {
            throw std::runtime_error("members out of order");
          }
        }
        client.barrier("done", kDeadline);
        client.leave();
      } catch (const std::exception& e) {
        failures[rank] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < kSize; ++rank) EXPECT_EQ(failures[rank], "") << "rank " << rank;
  EXPECT_EQ(server.rejected_count(), 0u);
}

// One server, one job after another: the second job must not read the
// first one's keys (a stale fabric address hangs the second job), and
// member_count() follows joins and leaves.
TEST(Rendezvous, TheNextJobStartsWithAnEmptyStore) {
  Server server(server_options());
  {
    Client a(client_options(server, 0, 2));
    Client b(client_options(server, 1, 2));
    a.set("addr/0", "first job");
    murmur::testing::wait_for([&] { return server.member_count() == 2; }, kDeadline);
    EXPECT_EQ(server.member_count(), 2u);
    a.leave();
    b.leave();
  }
  murmur::testing::wait_for([&] { return server.member_count() == 0; }, kDeadline);
  EXPECT_EQ(server.member_count(), 0u);
  Client c(client_options(server, 0, 3));
  EXPECT_FALSE(c.get("addr/0").has_value());
}

TEST(Rendezvous, WaitAndBarrierTimeOutNamingTheKeyAndTheMissingRanks) {
  Server server(server_options());
  Client a(client_options(server, 0, 3));
  const auto wait_error = message_of([&] { a.wait("never/set", 100ms); });
  EXPECT_NE(wait_error.find("never/set"), std::string::npos) << wait_error;
  Client b(client_options(server, 1, 3));
  const auto barrier_error = message_of([&] { a.barrier("b", 100ms); });
  EXPECT_NE(barrier_error.find("ranks still missing: 1, 2"), std::string::npos) << barrier_error;
  // The barrier is usable again afterwards.
  Client c(client_options(server, 2, 3));
  std::thread tb([&] { b.barrier("again", kDeadline); });
  std::thread tc([&] { c.barrier("again", kDeadline); });
  EXPECT_NO_THROW(a.barrier("again", kDeadline));
  tb.join();
  tc.join();
}

// gather: one reply with every rank's key, whether the keys were there
// before it asked or arrive while it waits; a timeout names the missing
// indices; a count no collective needs is refused.
TEST(Rendezvous, GatherAnswersOnceEveryKeyIsSet) {
  Server server(server_options());
  constexpr int kSize = 3;
  Client a(client_options(server, 0, kSize));
  Client b(client_options(server, 1, kSize));
  Client c(client_options(server, 2, kSize));
  a.set("g/1/0", std::string("zero\0", 5));
  b.set("g/1/1", "one");
  std::vector<std::string> early;
  std::thread waiting([&] { early = a.gather("g/1/", kSize, kDeadline); });
  // Not a wait: it gives a's gather time to block on key 2, so that the key
  // usually arrives while it waits; the result is the same if it does not.
  std::this_thread::sleep_for(50ms);
  c.set("g/1/2", "two");
  waiting.join();
  EXPECT_EQ(early, (std::vector<std::string>{std::string("zero\0", 5), "one", "two"}));
  // Everything present already: answered at once, to any member.
  EXPECT_EQ(b.gather("g/1/", kSize, 100ms), early);
  // A key sharing the prefix but not an index does not complete it.
  a.set("g/2/0", "x");
  a.set("g/2/10", "y");
  const auto error = message_of([&] { b.gather("g/2/", kSize, 100ms); });
  EXPECT_NE(error.find("gather 'g/2/' (3 keys) timed out"), std::string::npos) << error;
  EXPECT_NE(error.find("still missing: 1, 2"), std::string::npos) << error;
  const auto zero = message_of([&] { b.gather("g/3/", 0, 100ms); });
  EXPECT_NE(zero.find("count 0 out of range"), std::string::npos) << zero;
  const auto huge = message_of([&] { b.gather("g/3/", 1u << 30, 100ms); });
  EXPECT_NE(huge.find("out of range for world size 3"), std::string::npos) << huge;
  EXPECT_EQ(server.rejected_count(), 0u);
}

// A gather may retire a prefix: once it is answered, the server erases the
// keys under it (the previous collective's, under any view's generation)
// and nothing else, whether the gather completed at once or while it waited;
// a retire that covers the gather's own keys is refused.
TEST(Rendezvous, AnsweredGatherErasesTheKeysItRetires) {
  Server server(server_options());
  Client a(client_options(server, 0, 2));
  Client b(client_options(server, 1, 2));
  const std::size_t empty = server.store_bytes();
  a.set("c/0/0/0", "a0");
  b.set("c/0/0/1", "b0");
  b.set("c/0/1/1", "b0 again, in a later view");
  a.set("c/01/0/0", "not under c/0/");
  const std::size_t unrelated = std::string("c/01/0/0").size() + std::string("not under c/0/").size();
  EXPECT_EQ(a.gather("c/0/0/", 2, kDeadline), (std::vector<std::string>{"a0", "b0"}));
  a.set("c/1/0/0", "a1");
  b.set("c/1/0/1", "b1");
  // Complete at once: answered, then c/0/ erased.
  EXPECT_EQ(a.gather("c/1/0/", 2, kDeadline, "c/0/"), (std::vector<std::string>{"a1", "b1"}));
  EXPECT_FALSE(b.get("c/0/0/0").has_value());
  EXPECT_FALSE(b.get("c/0/1/1").has_value());
  EXPECT_EQ(b.get("c/01/0/0"), "not under c/0/");
  EXPECT_EQ(b.gather("c/1/0/", 2, kDeadline, "c/0/"), (std::vector<std::string>{"a1", "b1"}));
  EXPECT_EQ(server.store_bytes(), empty + unrelated + 2 * (std::string("c/1/0/0").size() + 2));

  // Completed by a later set while it waits: the same.
  a.set("c/2/0/0", "a2");
  std::vector<std::string> waited;
  std::thread waiting([&] { waited = a.gather("c/2/0/", 2, kDeadline, "c/1/"); });
  b.set("c/2/0/1", "b2");
  waiting.join();
  EXPECT_EQ(waited, (std::vector<std::string>{"a2", "b2"}));
  EXPECT_FALSE(b.get("c/1/0/0").has_value());
  EXPECT_EQ(server.store_bytes(), empty + unrelated + 2 * (std::string("c/2/0/0").size() + 2));

  const auto covering = message_of([&] { a.gather("c/2/0/", 2, kDeadline, "c/2/"); });
  EXPECT_NE(covering.find("its retire prefix 'c/2/' covers the gather's own keys"), std::string::npos) << covering;
  EXPECT_EQ(b.get("c/2/0/0"), "a2");
  EXPECT_EQ(server.rejected_count(), 0u);
}

TEST(RendezvousWire, GatherRequestAndValuesRoundTrip) {
  wire::Request q;
  q.id = 9;
  q.op = wire::Op::gather;
  q.key = "murmur/peer/schedule/12/";
  q.count = 8;
  q.timeout_ms = 250;
  q.retire = "murmur/peer/schedule/11/";
  const auto frame = wire::encode(wire::ClientMessage{q});
  std::vector<std::uint64_t> body((frame.size() - wire::kPrefixBytes) / 8);
  std::memcpy(body.data(), frame.data() + wire::kPrefixBytes, body.size() * 8);
  const auto back = std::get<wire::Request>(wire::decode_client(body, 1 << 20));
  EXPECT_EQ(back.op, wire::Op::gather);
  EXPECT_EQ(back.key, q.key);
  EXPECT_EQ(back.count, 8u);
  EXPECT_EQ(back.timeout_ms, 250u);
  EXPECT_EQ(back.retire, q.retire);

  wire::Response r;
  r.id = 9;
  r.kind = wire::Response::Kind::values;
  r.values = {"a", std::string("\0b", 2), ""};
  const auto rframe = wire::encode(wire::ServerMessage{r});
  std::vector<std::uint64_t> rbody((rframe.size() - wire::kPrefixBytes) / 8);
  std::memcpy(rbody.data(), rframe.data() + wire::kPrefixBytes, rbody.size() * 8);
  const auto rback = std::get<wire::Response>(wire::decode_server(rbody, 1 << 20));
  EXPECT_EQ(rback.kind, wire::Response::Kind::values);
  EXPECT_EQ(rback.values, r.values);
}

TEST(Rendezvous, RefusesWrongTokenDuplicateRankAndOtherWorldSize) {
  Server server(server_options());
  Client first(client_options(server, 1, 4));

  auto wrong = client_options(server, 0, 4);
  wrong.token = "guess";
  const auto token_error = message_of([&] { Client c(wrong); });
  EXPECT_NE(token_error.find("cluster token mismatch"), std::string::npos) << token_error;

  const auto dup_error = message_of([&] { Client c(client_options(server, 1, 4)); });
  EXPECT_NE(dup_error.find("rank 1 already joined from host host1"), std::string::npos) << dup_error;

  const auto size_error = message_of([&] { Client c(client_options(server, 2, 8)); });
  EXPECT_NE(size_error.find("world size 8 differs from 4"), std::string::npos) << size_error;

  EXPECT_EQ(server.rejected_count(), 3u);
  first.set("k", "v");
  EXPECT_EQ(first.get("k"), "v");
}

TEST(Rendezvous, HostileInputIsRefusedCountedAndHarmless) {
  Server server(server_options());
  Client good(client_options(server, 0, 1));
  std::size_t expected = 0;
  auto still_good = [&](const std::string& what) {
    EXPECT_TRUE(rejected_reaches(server, ++expected)) << what << ": rejected_count " << server.rejected_count();
    good.set("after/" + what, what);
    EXPECT_EQ(good.get("after/" + what), what) << what;
  };

  {  // Garbage: an HTTP request (its first 4 bytes read as a ~540 MB prefix).
    RawSocket s(server.port());
    const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    s.send(http, sizeof http - 1);
    EXPECT_TRUE(s.closed_by_server(2s));
    still_good("garbage");
  }
  {  // Truncated: the prefix promises 100 bytes, 10 arrive, then the end.
    RawSocket s(server.port());
    s.send_prefix(100);
    s.send("0123456789", 10);
    s.close();
    still_good("truncated");
  }
  {  // A 4 GiB prefix must be refused before anything is allocated.
    RawSocket s(server.port());
    s.send_prefix(0xFFFFFFFFu);
    EXPECT_TRUE(s.closed_by_server(2s));
    still_good("huge-prefix");
  }
  {  // Well framed, but not Cap'n Proto.
    RawSocket s(server.port());
    const char junk[] = "this is not capnp at all";  // 24 bytes: whole words
    s.send_prefix(24);
    s.send(junk, 24);
    EXPECT_TRUE(s.closed_by_server(2s));
    still_good("not-capnp");
  }
  {  // A well-formed segment table whose segment runs past the frame.
    RawSocket s(server.port());
    const std::uint32_t words[4] = {0, 1000, 0, 0};  // 1 segment of 1000 words, 8 bytes given
    s.send_prefix(16);
    s.send(words, 16);
    EXPECT_TRUE(s.closed_by_server(2s));
    still_good("short-segment");
  }
  {  // Valid capnp of the wrong kind before Hello: a request.
    RawSocket s(server.port());
    wire::Request q;
    q.id = 7;
    q.op = wire::Op::set;
    q.key = "sneaky";
    q.value = "x";
    s.send(wire::encode(wire::ClientMessage{q}));
    EXPECT_TRUE(s.closed_by_server(2s));
    still_good("request-before-hello");
    EXPECT_EQ(good.get("sneaky"), std::nullopt);
  }
  {  // A length that is not a whole number of words.
    RawSocket s(server.port());
    s.send_prefix(5);
    s.send("abcde", 5);
    EXPECT_TRUE(s.closed_by_server(2s));
    still_good("odd-length");
  }
}

TEST(Rendezvous, SilentConnectionBeforeHelloIsDropped) {
  auto options = server_options();
  options.hello_timeout = 200ms;
  Server server(options);
  RawSocket s(server.port());
  EXPECT_TRUE(s.closed_by_server(2s));
  EXPECT_TRUE(rejected_reaches(server, 1));
}

TEST(Rendezvous, KilledMemberIsReportedAndFailsPendingBarrier) {
  Server server(server_options(1000ms));
  LostLog lost;
  Client survivor(client_options(server, 0, 2));
  survivor.on_member_lost(lost.callback());

  RawSocket victim(server.port());
  wire::Hello hello;
  hello.token = "secret";
  hello.rank = 1;
  hello.size = 2;
  hello.host = "doomed";
  victim.send(wire::encode(wire::ClientMessage{hello}));
  const auto welcome = victim.read_message();
  ASSERT_TRUE(std::holds_alternative<wire::Welcome>(welcome));
  ASSERT_TRUE(std::get<wire::Welcome>(welcome).ok);

  std::string barrier_error;
  std::thread waiter([&] { barrier_error = message_of([&] { survivor.barrier("b", kDeadline); }); });
  // Not a wait: it lets the barrier usually reach the server before the loss;
  // if the loss comes first the barrier fails with the same message.
  std::this_thread::sleep_for(100ms);
  victim.abort();

  // Reported on the closed connection, not on a missed heartbeat: the reason
  // says which (a time bound would only measure the machine's load).
  const auto event = lost.wait_for(1, kDeadline);
  ASSERT_TRUE(event.has_value()) << "no MemberLost for rank 1";
  EXPECT_EQ(event->host, "doomed");
  EXPECT_FALSE(event->left_cleanly);
  EXPECT_NE(event->reason.find("connection closed"), std::string::npos) << event->reason;
  waiter.join();
  EXPECT_NE(barrier_error.find("rank 1 (doomed) was lost"), std::string::npos) << barrier_error;

  // The rank may rejoin once lost.
  Client again(client_options(server, 1, 2));
  EXPECT_EQ(again.members().size(), 2u);
}

TEST(Rendezvous, KilledChildProcessIsReported) {
  // The child is forked before this process starts any thread (the server's,
  // the client's: tests/support/forked_child.h) and learns the server's port
  // from it. It only joins and dies: no leave, no destructor.
  murmur::testing::ForkedChild child([](int fd) {
    const auto port = murmur::testing::receive_port(fd);
    if (!port) return 4;
    auto* c = new Client(client_options(*port, 1, 2));  // never destroyed: no leave()
    c->set("child/up", "1");
    return 0;
  });
  Server server(server_options(1000ms));
  LostLog lost;
  Client survivor(client_options(server, 0, 2));
  survivor.on_member_lost(lost.callback());
  ASSERT_TRUE(murmur::testing::send_port(child.fd(), server.port()));
  const auto up = survivor.wait("child/up", kDeadline);
  EXPECT_EQ(up, "1");
  const auto event = lost.wait_for(1, kDeadline);
  ASSERT_TRUE(event.has_value()) << "no MemberLost for the killed child";
  EXPECT_FALSE(event->left_cleanly);
  const int status = child.wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// The live member heartbeats every 50 ms against a timeout of 2 s, 40
// intervals: a loaded machine may hold its heartbeat thread back for tenths
// of a second, which a 300 ms timeout would have taken for silence. The
// same holds the other way: the client's own deadline for the server's
// answers (heartbeat_stale, 6 intervals by default: 300 ms here) is set as
// long, or a load spike makes the live member drop the server (seen at a
// load average of 22: "no answer to heartbeats for 300 ms").
TEST(Rendezvous, SilentMemberIsReportedWithinTheHeartbeatTimeout) {
  Server server(server_options(2000ms));
  LostLog lost;
  ClientOptions alive_options = client_options(server, 0, 2, 50ms);
  alive_options.heartbeat_stale = 2000ms;
  Client alive(alive_options);
  alive.on_member_lost(lost.callback());
  Client mute(client_options(server, 1, 2, 3600s));  // never heartbeats
  const auto event = lost.wait_for(1, kDeadline);
  ASSERT_TRUE(event.has_value()) << "no MemberLost for the silent rank 1";
  EXPECT_EQ(event->reason, "no heartbeat for 2000 ms");
  EXPECT_FALSE(event->left_cleanly);
  // The live one is not lost, and still served. Not a wait: more than one
  // heartbeat timeout passes, in which a wrongly lost member would be reported.
  std::this_thread::sleep_for(2500ms);
  alive.set("k", "v");
  EXPECT_EQ(alive.get("k"), "v");
  ASSERT_EQ(alive.members().size(), 1u);
}

TEST(Rendezvous, LeaveIsReportedAsClean) {
  Server server(server_options());
  LostLog lost;
  Client stays(client_options(server, 0, 2));
  stays.on_member_lost(lost.callback());
  {
    Client goes(client_options(server, 1, 2));
    goes.leave();
    EXPECT_THROW(goes.set("k", "v"), FabricError);
  }
  const auto event = lost.wait_for(1, kDeadline);
  ASSERT_TRUE(event.has_value());
  EXPECT_TRUE(event->left_cleanly);
  EXPECT_EQ(event->host, "host1");
  EXPECT_EQ(lost.wait_for(-1, 100ms), std::nullopt);  // our own connection is fine
}

TEST(Rendezvous, ClientReportsLostServer) {
  auto server = std::make_unique<Server>(server_options());
  LostLog lost;
  Client client(client_options(*server, 0, 1));
  client.on_member_lost(lost.callback());
  server.reset();
  const auto event = lost.wait_for(-1, kDeadline);
  ASSERT_TRUE(event.has_value());
  EXPECT_NE(event->reason.find("connection to rendezvous server lost"), std::string::npos) << event->reason;
  const auto error = message_of([&] { client.get("k"); });
  EXPECT_NE(error.find("lost"), std::string::npos) << error;
}

TEST(Rendezvous, ErrorsNameWhereAndWhy) {
  Server server(server_options());
  auto taken = server_options();
  taken.port = server.port();
  taken.bind_host = "127.0.0.1";
  // SO_REUSEADDR does not allow two listeners on one port.
  const auto bind_error = message_of([&] { Server second(taken); });
  EXPECT_NE(bind_error.find("127.0.0.1:" + std::to_string(server.port())), std::string::npos) << bind_error;

  std::uint16_t free_port;
  {
    Server probe(server_options());
    free_port = probe.port();
  }
  ClientOptions nobody;
  nobody.server_port = free_port;
  nobody.connect_timeout = 200ms;
  // Gives up (a client that retried forever would hang the test until ctest's
  // timeout); how fast is not asserted, a loaded machine stretches it.
  const auto connect_error = message_of([&] { Client c(nobody); });
  EXPECT_NE(connect_error.find("cannot connect"), std::string::npos) << connect_error;
}

TEST(Rendezvous, ClientWaitsForALateServer) {
  auto late_options = server_options();
  {
    Server probe(server_options());  // finds a free port, then frees it
    late_options.port = probe.port();
  }
  ClientOptions options;
  options.server_port = late_options.port;
  options.token = "secret";
  options.connect_timeout = kDeadline;
  std::unique_ptr<Server> late;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);  // not a wait: the server is late on purpose
    late = std::make_unique<Server>(late_options);
  });
  {
    Client client(options);
    client.set("k", "v");
    EXPECT_EQ(client.get("k"), "v");
  }
  starter.join();
}

}  // namespace
}  // namespace murmur::fabric::rendezvous
