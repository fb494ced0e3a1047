#include "tests/support/local_job.h"

#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "common/host.h"
#include "tests/support/program.h"
#include "tests/support/wait.h"

namespace murmur::testing {

LocalJob::LocalJob(const std::string& program, int size, const std::vector<std::string>& args,
                   std::chrono::milliseconds heartbeat_timeout) {
  char dir_template[] = "/tmp/murmur-test-XXXXXX";
  dir_ = ::mkdtemp(dir_template);
  fabric::rendezvous::ServerOptions server_options;
  server_options.bind_host = "127.0.0.1";
  server_options.token = "test-token";
  server_options.heartbeat_timeout = heartbeat_timeout;
  server_ = std::make_unique<fabric::rendezvous::Server>(server_options);
  program_ = program;
  for (int rank = 0; rank < size; ++rank) {
    Subprocess::Options options;
    options.argv = {std::string(MURMUR_BIN_DIR) + "/" + program,
                    "--rank",
                    std::to_string(rank),
                    "--size",
                    std::to_string(size),
                    "--rendezvous-port",
                    std::to_string(server_->port()),
                    "--token",
                    "test-token"};
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
  options.argv = {
      std::string(MURMUR_BIN_DIR) + "/" + program_,  "--rank",  "0",         "--size", "1", "--rendezvous-port",
      std::to_string(server_ ? server_->port() : 0), "--token", "test-token"};
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
