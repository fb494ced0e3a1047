// The murmur-rendezvous program: it refuses a bad flag with exit status 2,
// prints where it listens, serves a client and a joiner, and exits cleanly on SIGTERM.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fabric/rendezvous/client.h"

namespace murmur::fabric::rendezvous {
namespace {

TEST(Rendezvous, BinaryListensAndStopsOnSigterm) {
  const std::string binary = std::string(MURMUR_BIN_DIR) + "/src/fabric/rendezvous/murmur-rendezvous";
  {
    const int rc = std::system((binary + " --port 0 --bogus-flag 2>/dev/null").c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 2) << rc;
  }
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::setenv("MURMUR_TOKEN", "secret", 1);
    // The job token comes from the environment only (never a flag).
    ::setenv("MURMUR_JOB_TOKEN", "binary test job token", 1);
    ::execl(binary.c_str(), binary.c_str(), "--port", "0", "--bind", "127.0.0.1", nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  // Killed however the test ends: an orphaned server would hold ctest's
  // output pipe open and hang the run.
  struct KillAtExit {
    pid_t pid;
    ~KillAtExit() {
      if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
    }
  } guard{child};
  std::string line;
  char ch;
  while (::read(out[0], &ch, 1) == 1 && ch != '\n') line += ch;
  ::close(out[0]);
  ASSERT_EQ(line.rfind("murmur-rendezvous listening on 127.0.0.1:", 0), 0u) << line;
  ClientOptions options;
  options.server_port = static_cast<std::uint16_t>(std::stoi(line.substr(line.rfind(':') + 1)));
  options.token = "secret";  // from MURMUR_TOKEN
  options.job_token = "binary test job token";
  {
    Client client(options);
    client.set("k", "v");
    // It accepts joins too: a job of one, then a joiner gets id 1 and is
    // admitted in view 1.
    ClientOptions joining = options;
    joining.join = true;
    Client joiner(joining);
    EXPECT_EQ(joiner.rank(), 1);
    joiner.admit(std::chrono::seconds(10));
    const View view = joiner.view();
    EXPECT_EQ(view.generation, 1u);
    ASSERT_EQ(view.joined, std::vector<int>{1});
    EXPECT_EQ(view.members.size(), 2u);
  }
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  guard.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace murmur::fabric::rendezvous
