#include "tests/support/local_job.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "common/host.h"
#include "common/job_token.h"
#include "tests/support/program.h"
#include "tests/support/wait.h"

namespace murmur::testing {

namespace {

// A port a peer process can bind after this returns: below the kernel's
// ephemeral range (so no bind to port 0 anywhere on the host takes it in
// between) and free now. Started from this process' id, so that tests
// running side by side probe different ports first.
std::uint16_t unused_port_below_ephemeral_range() {
  constexpr int kFirst = 20000, kCount = 12000;  // below 32768, Linux's default ephemeral floor
  for (int i = 0; i < kCount; ++i) {
    const auto port = static_cast<std::uint16_t>(kFirst + (::getpid() * 7 + i) % kCount);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    if (free) return port;
  }
  throw std::runtime_error("no free port in 20000..31999 for a rank-0 rendezvous");
}

}  // namespace

LocalJob::LocalJob(const std::string& program, int size, const std::vector<std::string>& args,
                   std::chrono::milliseconds heartbeat_timeout)
    : program_(program) {
  start(size, args, start_server(heartbeat_timeout), false);
}

LocalJob::LocalJob(const std::string& program, int size, const std::vector<std::string>& args, Rendezvous where)
    : program_(program) {
  if (where == Rendezvous::kInTest) {
    start(size, args, start_server(std::chrono::milliseconds(3000)), false);
  } else {
    start(size, args, unused_port_below_ephemeral_range(), true);
  }
}

std::uint16_t LocalJob::start_server(std::chrono::milliseconds heartbeat_timeout) {
  fabric::rendezvous::ServerOptions server_options;
  server_options.bind_host = "127.0.0.1";
  server_options.token = "test-token";
  // The peers take $MURMUR_JOB_TOKEN from the environment they inherit; so
  // does their server, so that a suite run with one set exercises the whole
  // authenticated stack (docs/testing.md).
  server_options.job_token = job_token::from_environment();
  server_options.heartbeat_timeout = heartbeat_timeout;
  server_ = std::make_unique<fabric::rendezvous::Server>(server_options);
  return server_->port();
}

void LocalJob::start(int size, const std::vector<std::string>& args, std::uint16_t port, bool rank_zero_hosts) {
  char dir_template[] = "/tmp/murmur-test-XXXXXX";
  dir_ = ::mkdtemp(dir_template);
  port_ = port;
  for (int rank = 0; rank < size; ++rank) {
    Subprocess::Options options;
    options.argv = {std::string(MURMUR_BIN_DIR) + "/" + program_,
                    "--rank",
                    std::to_string(rank),
                    "--size",
                    std::to_string(size),
                    "--rendezvous-port",
                    std::to_string(port),
                    "--token",
                    "test-token"};
    if (rank == 0 && rank_zero_hosts) options.argv.push_back("--host-rendezvous");
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.stdout_path = dir_ + "/rank" + std::to_string(rank) + ".out";
    options.stderr_path = "=stdout";
    peers_.emplace_back(options);
  }
}

LocalJob::~LocalJob() {
  std::vector<pid_t> pids;
  for (const auto& p : peers_) pids.push_back(p.pid());
  peers_.clear();  // kills and reaps any peer still running
  for (pid_t pid : pids) remove_shm_regions_of(pid);
  server_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::optional<int> LocalJob::wait(int rank, std::chrono::steady_clock::time_point deadline) {
  return peers_.at(rank).wait_until(deadline);
}

std::vector<std::optional<int>> LocalJob::wait_all(std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::optional<int>> statuses;
  for (auto& p : peers_) statuses.push_back(p.wait_until(deadline));
  for (auto& p : peers_) p.signal(SIGKILL);
  return statuses;
}

int LocalJob::spawn_joiner(const std::vector<std::string>& args) {
  const int index = static_cast<int>(peers_.size());
  Subprocess::Options options;
  options.argv = {std::string(MURMUR_BIN_DIR) + "/" + program_,
                  "--rank",
                  "0",
                  "--size",
                  "1",
                  "--rendezvous-port",
                  std::to_string(port_),
                  "--token",
                  "test-token"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.stdout_path = dir_ + "/rank" + std::to_string(index) + ".out";
  options.stderr_path = "=stdout";
  peers_.emplace_back(options);
  return index;
}

void LocalJob::kill(int rank, int signo) { peers_.at(rank).signal(signo); }

std::string LocalJob::output(int rank) const { return read_file(dir_ + "/rank" + std::to_string(rank) + ".out"); }

bool LocalJob::wait_for_output(int rank, const std::string& text, std::chrono::seconds timeout) const {
  return wait_for([&] { return output(rank).find(text) != std::string::npos; }, timeout, std::chrono::milliseconds(20));
}

std::string LocalJob::describe(int rank, const std::optional<int>& status) const {
  return "rank " + std::to_string(rank) + " " +
         (status ? Subprocess::describe_status(*status) : std::string("did not finish in time")) + "; its output:\n" +
         output(rank);
}

}  // namespace murmur::testing
