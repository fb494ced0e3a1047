// The job token at connection set-up (docs/security.md): a process that knows
// a job's ports but not its token gets nothing in, on the asio data plane and
// on the rendezvous, and idle connections do not keep the job's members out.
// The intruder is a real process (tests/fabric/intruder.cc) on real ports.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/subprocess.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/server.h"
#include "fabric/transport_options.h"
#include "tests/support/program.h"
#include "tests/support/wait.h"

namespace murmur::fabric {
namespace {

using namespace std::chrono_literals;
using testing::run_program;

const std::string kIntruder = std::string(MURMUR_BIN_DIR) + "/tests/fabric/intruder";
const std::string kToken = "the job's token: 0123456789abcdef0123456789abcdef";

// What `logger_name` logs while it lives (warn and above).
class LogCapture {
 public:
  explicit LogCapture(const std::string& logger_name) : logger_(logger(logger_name)) {
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink_->set_level(spdlog::level::warn);
    logger_->sinks().push_back(sink_);
  }
  ~LogCapture() { std::erase(logger_->sinks(), sink_); }
  std::string text() {
    logger_->flush();
    return stream_.str();
  }

 private:
  std::shared_ptr<spdlog::logger> logger_;
  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TransportOptions asio_options(int rank, std::string job_token) {
  TransportOptions o;
  o.backend = "asio";
  o.peers_on_this_host = true;
  o.rank = rank;
  o.size = 2;
  o.connect_timeout = 20s;
  o.job_token = std::move(job_token);
  return o;
}

std::pair<std::string, std::string> host_port(const std::string& address) {
  const auto colon = address.rfind(':');
  return {address.substr(0, colon), address.substr(colon + 1)};
}

void connect_both(Transport& a, Transport& b) {
  const std::vector<PeerInfo> peers{{0, "host-0", a.address()}, {1, "host-1", b.address()}};
  auto other = std::async(std::launch::async, [&] { b.connect(peers); });
  a.connect(peers);
  other.get();
}

TEST(AsioAuthentication, AForeignProcessWithTheWrongTokenGetsNothingIn) {
  LogCapture log("fabric");
  auto rank0 = make_transport(asio_options(0, kToken));
  auto rank1 = make_transport(asio_options(1, kToken));
  const auto [host, port] = host_port(rank1->address());
  // Before the job's own rank 0 dials: the intruder claims to be it, once
  // with a wrong token and once with none, and sends a message of tag 7.
  for (const std::string token : {"a wrong token", "-"}) {
    const auto run = run_program({kIntruder, "asio", host, port, "0", "1", token}, 60s, true);
    EXPECT_EQ(run.status, 0) << run.out;
    EXPECT_NE(run.out.find("closed by the transport"), std::string::npos) << run.out;
  }
  connect_both(*rank0, *rank1);
  static const std::string sent = "the job's own bytes";  // outlives the transports
  auto got = std::make_shared<std::string>(64, '\0');
  auto recv = rank1->irecv(0, 7, got->data(), got->size());
  recv->retain(got);  // the transport may outlive this scope (transport.h, buffer rule)
  auto send = rank0->isend(1, 7, sent.data(), sent.size());
  ASSERT_TRUE(send->wait_for(60s));
  ASSERT_TRUE(recv->wait_for(60s));
  EXPECT_EQ(send->error(), nullptr);
  EXPECT_EQ(recv->error(), nullptr);
  EXPECT_EQ(recv->bytes(), sent.size());
  EXPECT_EQ(got->substr(0, sent.size()), sent);
  rank1.reset();
  const auto text = log.text();
  // Refused twice, logged once (one source address), counted at the end.
  EXPECT_EQ(count(text, "refused a connection from 127.0.0.1"), 1) << text;
  EXPECT_NE(text.find("wrong proof of the job token for rank 0"), std::string::npos) << text;
  EXPECT_NE(text.find("refused 2 connection(s) at set-up"), std::string::npos) << text;
}

TEST(AsioAuthentication, PeersWithDifferentTokensDoNotConnect) {
  auto options0 = asio_options(0, kToken);
  auto options1 = asio_options(1, "another job's token");
  options0.connect_timeout = options1.connect_timeout = 3s;
  auto rank0 = make_transport(options0);
  auto rank1 = make_transport(options1);
  const std::vector<PeerInfo> peers{{0, "host-0", rank0->address()}, {1, "host-1", rank1->address()}};
  auto other = std::async(std::launch::async, [&] { EXPECT_THROW(rank1->connect(peers), FabricError); });
  EXPECT_THROW(rank0->connect(peers), FabricError);
  other.get();
}

// libfabric has no token (docs/security.md): it admits by address. A message
// from an endpoint whose address is not in the member's AV, even one sent as
// "rank 0", matches none of its receives, which all name their source.
TEST(LibfabricAdmission, AMessageFromAnAddressOutsideTheJobIsNeverDelivered) {
  auto options = [](int rank) {
    TransportOptions o = asio_options(rank, kToken);
    o.backend = "libfabric";
    o.provider = "tcp";
    return o;
  };
  auto rank0 = make_transport(options(0));
  auto rank1 = make_transport(options(1));
  connect_both(*rank0, *rank1);
  // Posted first: were the intruder's message taken for rank 0's, this
  // receive would complete with it as soon as it arrives.
  auto got = std::make_shared<std::string>(64, '\0');
  auto recv = rank1->irecv(0, 7, got->data(), got->size());
  recv->retain(got);  // the transport may outlive this scope (transport.h, buffer rule)
  std::string hex;
  for (unsigned char c : rank1->address()) hex += fmt::format("{:02x}", c);
  const auto run = run_program({kIntruder, "libfabric", hex}, 60s, true);
  ASSERT_EQ(run.status, 0) << run.out;
  // The intruder's send is done: its message reached rank 1's endpoint.
  static const std::string sent = "the job's own bytes";  // outlives the transports
  auto send = rank0->isend(1, 7, sent.data(), sent.size());
  ASSERT_TRUE(send->wait_for(60s));
  ASSERT_TRUE(recv->wait_for(60s));
  EXPECT_EQ(recv->error(), nullptr);
  EXPECT_EQ(got->substr(0, recv->bytes()), sent);
}

rendezvous::ServerOptions server_options() {
  rendezvous::ServerOptions o;
  o.bind_host = "127.0.0.1";
  o.token = "cluster";
  o.job_token = kToken;
  return o;
}

rendezvous::ClientOptions client_options(const rendezvous::Server& server, int rank, std::string job_token) {
  rendezvous::ClientOptions o;
  o.server_port = server.port();
  o.token = "cluster";
  o.job_token = std::move(job_token);
  o.rank = rank;
  o.size = 2;
  o.self_host = "host" + std::to_string(rank);
  o.connect_timeout = 20s;
  return o;
}

// The two members of the job join, and see each other's keys.
void job_forms(const rendezvous::Server& server) {
  auto second = std::async(std::launch::async, [&] {
    rendezvous::Client client(client_options(server, 1, kToken));
    client.set("from/1", "one");
    client.barrier("formed", 20s);
    return client.get("from/0");
  });
  rendezvous::Client client(client_options(server, 0, kToken));
  client.set("from/0", "zero");
  client.barrier("formed", 20s);
  EXPECT_EQ(client.get("from/1"), "one");
  EXPECT_EQ(second.get(), "zero");
}

// Runs the intruder's rendezvous mode with `job_token` in its environment.
testing::ProgramRun rendezvous_intruder(const rendezvous::Server& server, const char* job_token) {
  if (job_token != nullptr) {
    ::setenv("MURMUR_JOB_TOKEN", job_token, 1);
  } else {
    ::unsetenv("MURMUR_JOB_TOKEN");
  }
  auto run = run_program({kIntruder, "rendezvous", "127.0.0.1", std::to_string(server.port()), "cluster"}, 60s, true);
  ::unsetenv("MURMUR_JOB_TOKEN");
  return run;
}

TEST(RendezvousAuthentication, AHelloWithoutTheJobTokenIsRefused) {
  rendezvous::Server server(server_options());
  for (const char* token : {"a wrong token", static_cast<const char*>(nullptr)}) {
    const auto run = rendezvous_intruder(server, token);
    EXPECT_EQ(run.status, 0) << run.out;
    EXPECT_NE(run.out.find("refused: job token proof does not match"), std::string::npos) << run.out;
  }
  EXPECT_EQ(server.member_count(), 0u);
  EXPECT_EQ(server.rejected_count(), 2u);
  // A real client without the token is told what is missing.
  try {
    rendezvous::Client client(client_options(server, 0, ""));
    FAIL() << "joined without the job token";
  } catch (const FabricError& e) {
    EXPECT_NE(std::string(e.what()).find("asks for a proof of the job token and this process has none"),
              std::string::npos)
        << e.what();
  }
  job_forms(server);
}

TEST(RendezvousAuthentication, AClientWithATokenRefusesAServerWithout) {
  auto options = server_options();
  options.job_token.clear();
  rendezvous::Server server(options);
  try {
    rendezvous::Client client(client_options(server, 0, kToken));
    FAIL() << "joined a server that does not check the job token";
  } catch (const FabricError& e) {
    EXPECT_NE(std::string(e.what()).find("does not check the job token"), std::string::npos) << e.what();
  }
}

// The server proves the token too: a process holding the rendezvous address
// with another token (or none) is not believed by the job's members.
TEST(RendezvousAuthentication, AClientRefusesAServerThatCannotProveTheToken) {
  auto options = server_options();
  options.job_token = "another job's token";
  rendezvous::Server server(options);
  try {
    rendezvous::Client client(client_options(server, 0, kToken));
    FAIL() << "believed a server with another token";
  } catch (const FabricError& e) {
    EXPECT_NE(std::string(e.what()).find("could not prove the job token"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.member_count(), 0u);
}

TEST(RendezvousAuthentication, ManyIdleConnectionsDoNotKeepTheJobOut) {
  auto options = server_options();
  options.max_connections_before_hello = 16;
  rendezvous::Server server(options);
  char dir[] = "/tmp/murmur-auth-test-XXXXXX";
  const std::string out = std::string(::mkdtemp(dir)) + "/intruder.out";
  Subprocess::Options intruder;
  intruder.argv = {kIntruder, "idle", "127.0.0.1", std::to_string(server.port()), "200"};
  intruder.stdout_path = out;
  intruder.stderr_path = "=stdout";
  Subprocess idle(intruder);  // killed when the test ends
  ASSERT_TRUE(testing::wait_for([&] { return testing::read_file(out).find("holding 200") != std::string::npos; }, 60s))
      << testing::read_file(out);
  job_forms(server);
  // Every connection past the cap closed the one silent longest.
  EXPECT_TRUE(testing::wait_for([&] { return server.rejected_count() >= 200 - 16; }, 60s)) << server.rejected_count();
  std::filesystem::remove_all(std::filesystem::path(out).parent_path());
}

}  // namespace
}  // namespace murmur::fabric
