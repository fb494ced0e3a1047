// murmur-run end to end: the real launcher starts real launcher_test_peer
// processes (here, or through a stand-in ssh), and the tests check what it
// prints, the summary it writes, its exit status, and that no peer or peer
// child outlives it.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "common/subprocess.h"
#include "tests/support/program.h"
#include "tests/support/wait.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using murmur::testing::read_file;
using murmur::testing::wait_until;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Running, and not a zombie waiting for its parent.
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

class Launcher : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/murmur-run-test-XXXXXX";
    dir_ = ::mkdtemp(dir);
    fs::create_directories(dir_ / "pids");
  }
  void TearDown() override {
    launcher_.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  void start(std::vector<std::string> args) {
    murmur::Subprocess::Options o;
    o.argv = {MURMUR_RUN_PATH};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.stdout_path = (dir_ / "out").string();
    o.stderr_path = (dir_ / "err").string();
    launcher_.emplace(o);
  }
  // Waits for murmur-run (20 s at most) and returns its exit status; -1 if
  // it did not exit normally.
  int finish() {
    auto status = launcher_->wait_until(Clock::now() + std::chrono::seconds(20));
    EXPECT_TRUE(status.has_value()) << "murmur-run did not finish; stderr:\n" << err();
    if (!status || !WIFEXITED(*status)) return -1;
    return WEXITSTATUS(*status);
  }
  int run(std::vector<std::string> args) {
    start(std::move(args));
    return finish();
  }
  std::string out() const { return read_file(dir_ / "out"); }
  std::string err() const { return read_file(dir_ / "err"); }
  std::string pid_dir() const { return (dir_ / "pids").string(); }

  // The pids the peers wrote ("rank*.pid", "child*.pid").
  std::vector<pid_t> pids() const {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator(dir_ / "pids")) {
      if (e.path().extension() == ".pid") out.push_back(std::stoi(read_file(e.path())));
    }
    return out;
  }
  bool wait_for_pid_files(std::size_t n) const {
    return wait_until([&] { return pids().size() >= n; }, Clock::now() + std::chrono::seconds(10),
                      std::chrono::milliseconds(20));
  }
  // Orphaned children are reaped by init a moment after their parent dies:
  // wait (a bounded while) for that rather than race it.
  void expect_all_dead(std::size_t expected) const {
    auto list = pids();
    EXPECT_EQ(list.size(), expected);
    auto deadline = Clock::now() + std::chrono::seconds(5);
    for (pid_t pid : list) {
      wait_until([&] { return !alive(pid); }, deadline, std::chrono::milliseconds(20));
      EXPECT_FALSE(alive(pid)) << "pid " << pid << " outlived murmur-run";
    }
  }

  fs::path dir_;
  std::optional<murmur::Subprocess> launcher_;
};

TEST_F(Launcher, FourLocalPeersSucceedWithPrefixedOutputAndASummary) {
  auto summary = dir_ / "summary.json";
  ASSERT_EQ(run({"-np", "4", "--summary", summary.string(), "--profile", "lan", "--interface", "127.0.0.0/8", "--",
                 LAUNCHER_TEST_PEER_PATH, "--events", "--join"}),
            0)
      << err();
  const auto o = out(), e = err();
  const auto cwd = fs::current_path().string();
  for (int r = 0; r < 4; ++r) {
    auto R = std::to_string(r), tag = "[" + R + "] ";
    EXPECT_NE(o.find(tag + "hello from rank " + R + " of 4 local " + R + "/4 host localhost launcher murmur-run cwd " +
                     cwd + " profile lan interface 127.0.0.0/8\n"),
              std::string::npos)
        << o;
    EXPECT_NE(o.find(tag + "joined group of 4\n"), std::string::npos) << o;
    EXPECT_NE(o.find(tag + "bye from rank " + R + "\n"), std::string::npos) << o;  // sent without a newline
    EXPECT_NE(e.find(tag + "stderr line from rank " + R + "\n"), std::string::npos) << e;
    // One plain progress line per peer and epoch, at the epoch's last step.
    EXPECT_EQ(count(o, tag + "progress epoch 1/2 step 3/3"), 1) << o;
    EXPECT_EQ(count(o, tag + "progress epoch 2/2 step 3/3"), 1) << o;
    EXPECT_EQ(count(o, tag + "progress"), 2) << o;
  }
  EXPECT_EQ(o.find("@murmur"), std::string::npos) << o;
  EXPECT_EQ(e.find("@murmur"), std::string::npos) << e;
  EXPECT_NE(o.find("   2  localhost     0.5200        0.00        0.01      0.25\n"), std::string::npos) << o;
  EXPECT_NE(o.find("average model test accuracy: 0.9000\n"), std::string::npos) << o;

  auto s = nlohmann::json::parse(read_file(summary));
  EXPECT_EQ(s["np"], 4);
  EXPECT_DOUBLE_EQ(s["average_model_test_accuracy"].get<double>(), 0.9);
  ASSERT_EQ(s["peer_test_accuracy"].size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_DOUBLE_EQ(s["peer_test_accuracy"][r].get<double>(), 0.5 + r / 100.0);
  EXPECT_EQ(s["bytes_sent"], 1000 + 2000 + 3000 + 4000);
  EXPECT_EQ(s["bytes_received"], 2 * (1000 + 2000 + 3000 + 4000));
  EXPECT_EQ(s["peers"][2]["rank"], 2);
  EXPECT_EQ(s["peers"][2]["model"], "test");
  EXPECT_EQ(s["command"], nlohmann::json({LAUNCHER_TEST_PEER_PATH, "--events", "--join"}));
  EXPECT_GT(s["wall_seconds"].get<double>(), 0.0);
  // Only the summary and murmur-run's own output files: no temporary left.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"err", "out", "pids", "summary.json"}));
}

// A peer inherits its standard streams and nothing else (not murmur-run's
// rendezvous listening socket, nor the pipes of the other peers), and gets a
// 256-bit job token in its environment, not on its command line; with it,
// the peers pass murmur-run's rendezvous, which asks for a proof of it.
TEST_F(Launcher, PeersInheritOnlyTheirStandardStreamsAndGetAJobTokenInTheEnvironment) {
  ASSERT_EQ(run({"-np", "3", "--", LAUNCHER_TEST_PEER_PATH, "--list-fds", "--join"}), 0) << err();
  const auto o = out();
  for (int r = 0; r < 3; ++r) {
    const auto tag = "[" + std::to_string(r) + "] ";
    EXPECT_NE(o.find(tag + "fds: 0 1 2\n"), std::string::npos) << o;
    EXPECT_NE(o.find(tag + "job token: 64 characters, on the command line: no\n"), std::string::npos) << o;
    EXPECT_NE(o.find(tag + "joined group of 3\n"), std::string::npos) << o;
  }
}

TEST_F(Launcher, AFailingPeerIsNamedAndTheOthersAreStoppedUnderTheStopPolicy) {
  EXPECT_EQ(run({"-np", "4", "--on-failure", "stop", "--", LAUNCHER_TEST_PEER_PATH, "--join", "--fail-rank", "2",
                 "--exit-code", "3", "--sleep", "30", "--pid-dir", pid_dir(), "--spawn-child"}),
            1);
  const auto e = err();
  EXPECT_NE(e.find("murmur-run: rank 2 (localhost): exited with status 3; last stderr line: "
                   "'rank 2 failing on purpose'\n"),
            std::string::npos)
      << e;
  // Peers the launcher stopped are not blamed.
  EXPECT_EQ(count(e, "murmur-run: rank "), 1) << e;
  expect_all_dead(8);  // 4 peers and the child each started
}

TEST_F(Launcher, APeerKilledBySignalIsNamedWithItsLastStderrLine) {
  start({"-np", "2", "--on-failure", "stop", "--", LAUNCHER_TEST_PEER_PATH, "--sleep", "30", "--pid-dir", pid_dir()});
  ASSERT_TRUE(wait_for_pid_files(2)) << err();
  ::kill(std::stoi(read_file(dir_ / "pids" / "rank1.pid")), SIGKILL);
  EXPECT_EQ(finish(), 1);
  EXPECT_NE(err().find("murmur-run: rank 1 (localhost): killed by signal 9 (Killed); last stderr line: "
                       "'stderr line from rank 1'\n"),
            std::string::npos)
      << err();
  EXPECT_EQ(count(err(), "murmur-run: rank "), 1) << err();
  expect_all_dead(2);
}

TEST_F(Launcher, AMissingProgramIsReportedAndNothingRuns) {
  EXPECT_EQ(run({"-np", "2", "--", "./nope"}), 1);
  EXPECT_EQ(err(), "murmur-run: rank 0 (localhost): cannot start './nope': No such file or directory\n");
}

TEST_F(Launcher, AMalformedHostfileIsOneLineWithFileAndLine) {
  auto hosts = dir_ / "hosts.txt";
  std::ofstream(hosts) << "nodeA slots=2\n# spare\nnodeB slots=two\n";
  EXPECT_EQ(run({"--hostfile", hosts.string(), "--", LAUNCHER_TEST_PEER_PATH}), 2);
  EXPECT_EQ(err(), "murmur-run: " + hosts.string() +
                       ":3: bad slots count 'two' (expected a whole number from 1 to 65536): 'nodeB slots=two'\n");
}

TEST_F(Launcher, RemoteHostsStartThroughTheSshTemplate) {
  auto ssh = dir_ / "fake-ssh";
  // Stands in for ssh: logs the host and the command line, and runs it
  // locally (its stdin is the peer's, as ssh forwards it).
  std::ofstream(ssh) << "#!/bin/sh\necho \"$1\" >> '" << (dir_ / "ssh.log").string() << "'\nshift\necho \"$*\" >> '"
                     << (dir_ / "commands.log").string() << "'\nexec /bin/sh -c \"$*\"\n";
  fs::permissions(ssh, fs::perms::owner_all);
  auto hosts = dir_ / "hosts.txt";
  std::ofstream(hosts) << "# two fake hosts\nnodeA slots=2\n\n  nodeB:2  \n";
  ASSERT_EQ(run({"--hostfile", hosts.string(), "--ssh", "'" + ssh.string() + "' {host} {command}", "--rendezvous-host",
                 "127.0.0.1", "--token", "it's a token", "--", LAUNCHER_TEST_PEER_PATH, "--join", "--list-fds"}),
            0)
      << err();
  const auto o = out();
  const auto cwd = fs::current_path().string();
  const char* host_of[] = {"nodeA", "nodeA", "nodeB", "nodeB"};
  for (int r = 0; r < 4; ++r) {
    auto R = std::to_string(r);
    EXPECT_NE(o.find("[" + R + "] hello from rank " + R + " of 4 local " + std::to_string(r % 2) + "/2 host " +
                     host_of[r] + " launcher murmur-run cwd " + cwd + " profile (unset) interface (unset)\n"),
              std::string::npos)
        << o;
    EXPECT_NE(o.find("[" + R + "] joined group of 4\n"), std::string::npos) << o << err();
    // The job token came on ssh's stdin, not in the command ps shows.
    EXPECT_NE(o.find("[" + R + "] job token: 64 characters, on the command line: no\n"), std::string::npos) << o;
  }
  const auto commands = read_file(dir_ / "commands.log");
  EXPECT_NE(commands.find("MURMUR_RANK="), std::string::npos) << commands;
  EXPECT_EQ(commands.find("MURMUR_JOB_TOKEN="), std::string::npos) << commands;
  // The stand-ins run concurrently: their log lines come in any order.
  std::istringstream log(read_file(dir_ / "ssh.log"));
  std::vector<std::string> logged;
  for (std::string line; std::getline(log, line);) logged.push_back(line);
  std::sort(logged.begin(), logged.end());
  EXPECT_EQ(logged, (std::vector<std::string>{"nodeA", "nodeA", "nodeB", "nodeB"}));
}

TEST_F(Launcher, SigtermIsForwardedAndNobodySurvives) {
  start({"-np", "3", "--", LAUNCHER_TEST_PEER_PATH, "--sleep", "30", "--pid-dir", pid_dir(), "--spawn-child"});
  ASSERT_TRUE(wait_for_pid_files(6)) << err();
  launcher_->signal(SIGTERM);
  EXPECT_EQ(finish(), 128 + SIGTERM);
  EXPECT_NE(err().find("murmur-run: got SIGTERM; stopping 3 running peer(s)\n"), std::string::npos) << err();
  EXPECT_EQ(count(err(), "murmur-run: rank "), 0) << err();
  expect_all_dead(6);
}

TEST_F(Launcher, TheTimeoutStopsPeersThatIgnoreSigterm) {
  EXPECT_EQ(run({"-np", "2", "--timeout", "1", "--kill-grace", "0.5", "--", LAUNCHER_TEST_PEER_PATH, "--sleep", "30",
                 "--ignore-term", "--pid-dir", pid_dir()}),
            124);
  EXPECT_NE(err().find("murmur-run: the job ran past --timeout 1 s; stopping 2 running peer(s)\n"), std::string::npos)
      << err();
  expect_all_dead(2);
}

TEST_F(Launcher, ABackgroundChildHoldingTheOutputIsKilledAfterTheGrace) {
  // The peer exits 0 at once; the child it leaves keeps the stdout pipe open.
  auto script = "sleep 30 & echo $! > '" + pid_dir() + "/child0.pid'; echo started";
  EXPECT_EQ(run({"-np", "1", "--kill-grace", "0.3", "--", "/bin/sh", "-c", script}), 0) << err();
  EXPECT_NE(out().find("[0] started\n"), std::string::npos) << out();
  expect_all_dead(1);
}

TEST_F(Launcher, FlagErrorsAreOneLineAndExitTwo) {
  EXPECT_EQ(run({"-np", "2"}), 2);
  EXPECT_EQ(err(), "murmur-run: no program to run (usage: murmur-run -np N [options] -- PROGRAM ARGS...)\n");
  EXPECT_EQ(run({"-np", "5", "-H", "a:2,b:2", "--", "true"}), 2);
  EXPECT_EQ(err(), "murmur-run: -np 5 asks for 5 ranks but -H has only 4 slots (a: 2, b: 2)\n");
  EXPECT_EQ(run({"-np", "2", "--bogus", "--", "true"}), 2);
  EXPECT_EQ(count(err(), "\n"), 1) << err();
  EXPECT_NE(err().find("--bogus"), std::string::npos) << err();
  EXPECT_EQ(run({"--", "true"}), 2);
  EXPECT_EQ(err(), "murmur-run: -np is required when no --hostfile or -H is given\n");
}

TEST_F(Launcher, HelpListsEveryFlagWithItsDefault) {
  EXPECT_EQ(run({"--help"}), 0);
  const auto o = out();
  for (const char* flag : {"--np", "--hostfile", "-H", "--profile", "--interface", "--summary", "--ssh",
                           "--rendezvous-host", "--timeout", "--kill-grace", "--token", "--on-failure", "--min-np",
                           "--max-restarts", "ssh -o BatchMode=yes {host} {command}"}) {
    EXPECT_NE(o.find(flag), std::string::npos) << flag << " missing from:\n" << o;
  }
}

TEST_F(Launcher, UnderTheContinuePolicyTheOthersFinishWithoutALostPeer) {
  auto summary = dir_ / "summary.json";
  // The others work (sleep) for a second after rank 2 has failed.
  ASSERT_EQ(run({"-np", "4", "--summary", summary.string(), "--", LAUNCHER_TEST_PEER_PATH, "--fail-rank", "2",
                 "--exit-code", "3", "--sleep", "1"}),
            0)
      << err();
  const auto o = out(), e = err();
  EXPECT_NE(e.find("murmur-run: rank 2 (localhost) lost after "), std::string::npos) << e;
  EXPECT_NE(e.find(" s: exited with status 3; last stderr line: 'rank 2 failing on purpose'; "), std::string::npos)
      << e;
  for (int r : {0, 1, 3}) EXPECT_NE(o.find("[" + std::to_string(r) + "] bye from rank"), std::string::npos) << o;
  EXPECT_NE(o.find("finished: 3 of 4 peers (--min-np 2, --on-failure continue)\n"), std::string::npos) << o;
  auto s = nlohmann::json::parse(read_file(summary));
  EXPECT_EQ(s["on_failure"], "continue");
  EXPECT_EQ(s["min_np"], 2);
  EXPECT_EQ(s["finished"], 3);
  ASSERT_EQ(s["lost"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["lost"][0]["rank"], 2);
  EXPECT_EQ(s["lost"][0]["exit_status"], 3);
  EXPECT_EQ(s["lost"][0]["reason"], "exited with status 3");
  EXPECT_EQ(s["lost"][0]["last_stderr"], "rank 2 failing on purpose");
  EXPECT_GT(s["lost"][0]["seconds"].get<double>(), 0.0);
  EXPECT_TRUE(s["restarted"].empty());
}

TEST_F(Launcher, BelowMinNpTheRestAreStoppedAndTheJobFails) {
  // --join: every peer has written its pids before rank 2 fails.
  EXPECT_EQ(run({"-np", "4", "--min-np", "4", "--", LAUNCHER_TEST_PEER_PATH, "--join", "--fail-rank", "2", "--sleep",
                 "30", "--pid-dir", pid_dir(), "--spawn-child"}),
            1);
  const auto e = err();
  EXPECT_NE(e.find("murmur-run: rank 2 (localhost) lost after "), std::string::npos) << e;
  EXPECT_NE(e.find("murmur-run: 0 finished and 3 running peer(s) are fewer than --min-np 4; stopping the job\n"),
            std::string::npos)
      << e;
  EXPECT_EQ(count(e, "murmur-run: rank "), 1) << e;  // the stopped ones are not blamed
  expect_all_dead(8);
}

TEST_F(Launcher, ARestartedPeerKnowsItsAttemptAndTheJobSucceeds) {
  auto summary = dir_ / "summary.json";
  ASSERT_EQ(run({"-np", "2", "--on-failure", "restart", "--max-restarts", "1", "--summary", summary.string(), "--",
                 LAUNCHER_TEST_PEER_PATH, "--crash-rank", "1", "--crashes", "1"}),
            0)
      << err();
  EXPECT_NE(out().find("[1] restart count 1\n"), std::string::npos) << out();
  EXPECT_EQ(count(out(), "] restart count"), 1) << out();
  EXPECT_NE(err().find("murmur-run: rank 1 (localhost) restarted (attempt 1) after "), std::string::npos) << err();
  EXPECT_NE(err().find("exited with status 3; last stderr line: 'rank 1 crashing (restart count 0)'\n"),
            std::string::npos)
      << err();
  auto s = nlohmann::json::parse(read_file(summary));
  EXPECT_EQ(s["finished"], 2);
  EXPECT_TRUE(s["lost"].empty()) << s.dump(2);
  ASSERT_EQ(s["restarted"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["restarted"][0]["rank"], 1);
  EXPECT_EQ(s["restarted"][0]["attempt"], 1);
}

TEST_F(Launcher, APeerThatCrashesPastMaxRestartsIsLost) {
  auto summary = dir_ / "summary.json";
  ASSERT_EQ(run({"-np", "2", "--on-failure", "restart", "--max-restarts", "1", "--summary", summary.string(), "--",
                 LAUNCHER_TEST_PEER_PATH, "--crash-rank", "1", "--crashes", "2"}),
            0)
      << err();
  EXPECT_NE(out().find("[1] restart count 1\n"), std::string::npos) << out();
  EXPECT_NE(err().find("murmur-run: rank 1 (localhost) lost after "), std::string::npos) << err();
  auto s = nlohmann::json::parse(read_file(summary));
  EXPECT_EQ(s["finished"], 1);
  ASSERT_EQ(s["restarted"].size(), 1u) << s.dump(2);
  ASSERT_EQ(s["lost"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["lost"][0]["rank"], 1);
  EXPECT_EQ(s["lost"][0]["last_stderr"], "rank 1 crashing (restart count 1)");
}

TEST_F(Launcher, EachViewChangeIsShownOnceWhateverHowManyPeersReportIt) {
  auto summary = dir_ / "summary.json";
  ASSERT_EQ(run({"-np", "3", "--summary", summary.string(), "--", LAUNCHER_TEST_PEER_PATH, "--view", "1"}), 0) << err();
  EXPECT_EQ(count(err(), "murmur-run: view 1: 3 members, lost 3, joined none, spectral gap 0.5000 (first from rank "),
            1)
      << err();
  EXPECT_NE(out().find("view changes: 1\n"), std::string::npos) << out();
  auto s = nlohmann::json::parse(read_file(summary));
  EXPECT_EQ(s["view_changes"], 1);
  ASSERT_EQ(s["views"].size(), 1u);
  EXPECT_EQ(s["views"][0]["lost"], nlohmann::json::array({3}));
  EXPECT_EQ(s["views"][0]["members"], 3);
}

TEST_F(Launcher, PeersOutliveASigkilledLauncherAndFinishTheirWork) {
  start({"-np", "2", "--", LAUNCHER_TEST_PEER_PATH, "--pid-dir", pid_dir(), "--chatter", "2"});
  ASSERT_TRUE(wait_for_pid_files(2)) << err();
  launcher_->signal(SIGKILL);
  auto status = launcher_->wait_until(Clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(status && WIFSIGNALED(*status));
  for (int r = 0; r < 2; ++r) {
    auto done = dir_ / "pids" / ("done" + std::to_string(r));
    ASSERT_TRUE(wait_until([&] { return fs::exists(done); }, Clock::now() + std::chrono::seconds(15),
                           std::chrono::milliseconds(20)))
        << "rank " << r << " did not finish after murmur-run was killed";
    // Its writes to the dead launcher's pipes failed, and it went on.
    EXPECT_GT(std::stoi(read_file(done)), 0) << "rank " << r;
  }
  expect_all_dead(2);
}

}  // namespace
