// Whole training jobs: murmur-run launching murmur-peer processes on this
// host, as users do. Short runs (a capped shard, one epoch) so that the
// suite stays quick; the full-size numbers live in docs/training.md.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/program.h"
#include "tests/support/wait.h"

namespace {

std::string bin(const std::string& relative) { return std::string(MURMUR_BIN_DIR) + "/" + relative; }

// The job to its end (murmur-run's own --timeout is 240 s): its exit status,
// and stdout and stderr together in `out`.
murmur::testing::ProgramRun run(const std::vector<std::string>& argv) {
  return murmur::testing::run_program(argv, std::chrono::seconds(280), /*merge_stderr=*/true);
}

class TrainJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("murmur-train-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> launch(int np, std::vector<std::string> peer_args) {
    std::vector<std::string> argv = {bin("src/peer/launcher/murmur-run"),
                                     "-np",
                                     std::to_string(np),
                                     "--timeout",
                                     "240",
                                     "--summary",
                                     (dir_ / "summary.json").string(),
                                     "--",
                                     bin("src/peer/train/murmur-peer")};
    argv.insert(argv.end(), peer_args.begin(), peer_args.end());
    return argv;
  }

  nlohmann::json summary() {
    std::ifstream in(dir_ / "summary.json");
    return nlohmann::json::parse(in);
  }

  std::filesystem::path dir_;
};

TEST_F(TrainJob, ChocoTopkTrainsAndTheSummaryHasTheKeys) {
  auto r = run(
      launch(4, {"--algorithm", "choco", "--compress", "topk:0.05", "--topology", "exponential", "--model", "mlp:64",
                 "--epochs", "1", "--train-examples", "1500", "--metrics", (dir_ / "m-{rank}.jsonl").string()}));
  ASSERT_EQ(r.status, 0) << r.out;
  auto s = summary();
  ASSERT_TRUE(s["average_model_test_accuracy"].is_number()) << s.dump();
  // 6,000 examples seen once: well above chance (0.1), far below converged.
  EXPECT_GT(s["average_model_test_accuracy"].get<double>(), 0.6) << s.dump();
  ASSERT_EQ(s["peer_test_accuracy"].size(), 4u);
  EXPECT_GT(s["bytes_sent"].get<double>(), 0);
  EXPECT_GT(s["wall_seconds"].get<double>(), 0);
  // Per-peer metrics: a start line, step lines, an epoch line with the test
  // accuracy and consensus distance, and a summary.
  std::ifstream in(dir_ / "m-2.jsonl");
  std::string line;
  std::map<std::string, nlohmann::json> last;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    last[j["event"].get<std::string>()] = j;
  }
  ASSERT_TRUE(last.count("start") && last.count("step") && last.count("epoch") && last.count("summary"));
  EXPECT_TRUE(last["epoch"]["consensus_distance"].is_number());
  EXPECT_TRUE(last["epoch"]["links"].is_object());
  EXPECT_GT(last["summary"]["peak_rss_bytes"].get<double>(), 0);
  // The epoch's time splits into setup, test-set passes and training.
  const auto& epoch = last["epoch"];
  const double setup = last["summary"]["setup_seconds"].get<double>();
  EXPECT_GT(setup, 0);
  EXPECT_GT(epoch["eval_seconds"].get<double>(), 0);
  EXPECT_GT(epoch["train_seconds"].get<double>(), 0);
  EXPECT_NEAR(epoch["time"].get<double>(),
              setup + epoch["eval_seconds"].get<double>() + epoch["train_seconds"].get<double>(), 1e-6);
  EXPECT_EQ(epoch["eval_seconds"], last["summary"]["eval_seconds"]);  // no pass after the last epoch's
}

TEST_F(TrainJob, DirichletPartitionCompletesAndReportsEveryPeer) {
  auto r = run(launch(4, {"--algorithm", "dpsgd", "--topology", "ring", "--model", "logreg", "--epochs", "1",
                          "--train-examples", "500", "--partition", "dirichlet:0.3"}));
  ASSERT_EQ(r.status, 0) << r.out;
  auto s = summary();
  EXPECT_EQ(s["peer_test_accuracy"].size(), 4u);
  EXPECT_TRUE(s["average_model_test_accuracy"].is_number());
}

TEST_F(TrainJob, AnUnknownFlagFailsTheJobNamingIt) {
  auto r = run(launch(2, {"--epochs", "1", "--no-such-flag"}));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--no-such-flag"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank"), std::string::npos) << r.out;
}

TEST_F(TrainJob, AMissingDatasetDirectoryIsNamed) {
  auto r = run(launch(2, {"--epochs", "1", "--data-dir", "/nonexistent/fashion"}));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("/nonexistent/fashion"), std::string::npos) << r.out;
}

TEST_F(TrainJob, AMissingPeerBinaryIsNamed) {
  auto r = run({bin("src/peer/launcher/murmur-run"), "-np", "2", "--", (dir_ / "no-such-peer").string()});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("no-such-peer"), std::string::npos) << r.out;
}

TEST_F(TrainJob, MalformedScheduleAndProfileFilesAreRefusedWithFileAndLine) {
  const auto schedule = (dir_ / "net.sched").string();
  std::ofstream(schedule) << "# slow network\nmin_ratio = 0.01\nmax_period = many\n";
  auto r = run(launch(2, {"--epochs", "1", "--train-examples", "100", "--schedule", "@" + schedule}));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("net.sched:3"), std::string::npos) << r.out;

  const auto profile = (dir_ / "links.txt").string();
  std::ofstream(profile) << "default 10gbe\nedge 0 1 lat=1ms,bw=1gbt\n";
  r = run(launch(2, {"--epochs", "1", "--train-examples", "100", "--link-profile", "@" + profile}));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("links.txt:2"), std::string::npos) << r.out;
}

TEST_F(TrainJob, ResumesFromCheckpointsOfEveryRank) {
  const auto ckpt = (dir_ / "ckpt").string();
  auto first = run(launch(2, {"--algorithm", "allreduce", "--model", "logreg", "--epochs", "1", "--train-examples",
                              "300", "--checkpoint-dir", ckpt}));
  ASSERT_EQ(first.status, 0) << first.out;
  ASSERT_TRUE(std::filesystem::exists(ckpt + "/rank-0.ckpt"));
  ASSERT_TRUE(std::filesystem::exists(ckpt + "/rank-1.ckpt"));
  auto resumed =
      run(launch(2, {"--algorithm", "allreduce", "--model", "logreg", "--epochs", "2", "--train-examples", "300",
                     "--checkpoint-dir", ckpt, "--resume", "--metrics", (dir_ / "m-{rank}.jsonl").string()}));
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  // Only epoch 2 ran.
  std::ifstream in(dir_ / "m-0.jsonl");
  std::string line;
  std::vector<int> epochs;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "epoch") epochs.push_back(j["epoch"]);
  }
  EXPECT_EQ(epochs, std::vector<int>{2});
  // Checkpoints from different epochs: every rank refuses (none trains on
  // alone until a timeout blames a lost peer).
  std::filesystem::copy_file(ckpt + "/rank-1.ckpt", dir_ / "rank-1.epoch2.ckpt");
  auto third = run(launch(2, {"--algorithm", "allreduce", "--model", "logreg", "--epochs", "3", "--train-examples",
                              "300", "--checkpoint-dir", ckpt, "--resume"}));
  ASSERT_EQ(third.status, 0) << third.out;
  std::filesystem::copy_file(dir_ / "rank-1.epoch2.ckpt", ckpt + "/rank-1.ckpt",
                             std::filesystem::copy_options::overwrite_existing);
  auto mixed = run(launch(2, {"--algorithm", "allreduce", "--model", "logreg", "--epochs", "4", "--train-examples",
                              "300", "--checkpoint-dir", ckpt, "--resume"}));
  EXPECT_NE(mixed.status, 0);
  EXPECT_NE(mixed.out.find("other ranks' checkpoints are from other epochs"), std::string::npos) << mixed.out;
  // A checkpoint of another model is refused, naming the file: whichever
  // rank reads its own first (the launcher then stops the other).
  auto wrong = run(launch(2, {"--algorithm", "allreduce", "--model", "mlp:16", "--epochs", "3", "--train-examples",
                              "300", "--checkpoint-dir", ckpt, "--resume"}));
  EXPECT_NE(wrong.status, 0);
  EXPECT_TRUE(wrong.out.find("rank-0.ckpt is of rank 0 of 2, model logreg") != std::string::npos ||
              wrong.out.find("rank-1.ckpt is of rank 1 of 2, model logreg") != std::string::npos)
      << wrong.out;
}

// Scenario 7 of docs/resilience.md at small scale: a job stopped after its
// first epoch (--stop-after-epoch) and resumed (--resume) ends with every
// rank's checkpoint byte for byte that of the same job run through:
// parameters, momentum, the algorithm's state (choco's public copies and
// error feedback, sgp's push-sum weight, topk-sgd's residual), the data position. The
// round-synchronous algorithms on the CPU with fixed seeds are deterministic.
class StoppedAndResumed : public ::testing::TestWithParam<std::vector<std::string>> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("murmur-resume-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_P(StoppedAndResumed, EndsBitForBitAsTheJobRunThrough) {
  auto job = [&](const std::string& checkpoints, std::vector<std::string> more) {
    std::vector<std::string> argv = {bin("src/peer/launcher/murmur-run"), "-np", "3", "--timeout", "240", "--",
                                     bin("src/peer/train/murmur-peer")};
    argv.insert(argv.end(), GetParam().begin(), GetParam().end());
    for (const std::string& a : {"--model", "mlp:32", "--train-examples", "900", "--seed", "7", "--epochs", "2"})
      argv.push_back(a);
    argv.insert(argv.end(), {"--checkpoint-dir", (dir_ / checkpoints).string()});
    argv.insert(argv.end(), more.begin(), more.end());
    return run(argv);
  };
  auto through = job("through", {});
  ASSERT_EQ(through.status, 0) << through.out;
  auto stopped = job("resumed", {"--stop-after-epoch", "1"});
  ASSERT_EQ(stopped.status, 0) << stopped.out;
  ASSERT_NE(stopped.out.find("stopping after epoch 1 of 2"), std::string::npos) << stopped.out;
  auto resumed = job("resumed", {"--resume"});
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  ASSERT_NE(resumed.out.find("resumed after epoch 1"), std::string::npos) << resumed.out;
  for (int r = 0; r < 3; ++r) {
    const std::string name = "rank-" + std::to_string(r) + ".ckpt";
    const std::string a = murmur::testing::read_file(dir_ / "through" / name);
    const std::string b = murmur::testing::read_file(dir_ / "resumed" / name);
    EXPECT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << name << " differs between the job run through and the stopped and resumed one";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, StoppedAndResumed,
    ::testing::Values(std::vector<std::string>{"--algorithm", "choco", "--topology", "exponential", "--compress",
                                               "topk:0.05"},
                      std::vector<std::string>{"--algorithm", "sgp", "--topology", "one-peer-exponential"},
                      std::vector<std::string>{"--algorithm", "topk-sgd", "--topk-density", "0.01"}),
    [](const auto& info) {
      std::string name = info.param[1];
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// A TCP port nobody listens on now (the kernel's pick), for a job whose
// rendezvous address joiners must know before it starts.
int unused_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(a.sin_port);
}

// Every record of one event in a metrics file, in order.
std::vector<nlohmann::json> records(const std::filesystem::path& file, const std::string& event) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j["event"] == event) out.push_back(j);
  }
  return out;
}

// Scenario 8 of docs/resilience.md at small scale, with the real trainer: two
// peers join a running job together (murmur-run --join) in its second
// epoch; they enter mid-epoch, keep the members' step count for it (their
// epoch ends, and its collectives run, at the members' step), and end
// within two points of the members' test accuracy.
TEST_F(TrainJob, TwoPeersJoinARunningJobTogetherAndEndWithTheOthers) {
  const std::string port = std::to_string(unused_tcp_port()), token = "join-test";
  // Both murmur-runs get the job token from the environment (the joiners
  // must prove the job's: docs/security.md).
  ::setenv("MURMUR_JOB_TOKEN", "join test job token", 1);
  const std::vector<std::string> peer = {
      "--algorithm", "choco",  "--compress", "topk:0.05", "--topology", "exponential",
      "--model",     "mlp:64", "--epochs",   "4",         "--metrics",  (dir_ / "m-{rank}.jsonl").string()};
  auto members = launch(4, peer);
  members.insert(members.begin() + 1, {"--token", token, "--rendezvous-port", port});
  auto job = std::async(std::launch::async, [&] { return run(members); });
  ASSERT_TRUE(murmur::testing::wait_for([&] { return !records(dir_ / "m-0.jsonl", "epoch").empty(); },
                                        std::chrono::seconds(200), std::chrono::milliseconds(50)))
      << "the job never ended its first epoch";
  std::vector<std::string> joiners = {bin("src/peer/launcher/murmur-run"),
                                      "-np",
                                      "2",
                                      "--timeout",
                                      "240",
                                      "--join",
                                      "127.0.0.1:" + port,
                                      "--token",
                                      token,
                                      "--",
                                      bin("src/peer/train/murmur-peer")};
  joiners.insert(joiners.end(), peer.begin(), peer.end());
  const auto joined = run(joiners);
  const auto done = job.get();
  ::unsetenv("MURMUR_JOB_TOKEN");
  ASSERT_EQ(done.status, 0) << done.out;
  ASSERT_EQ(joined.status, 0) << joined.out;
  double members_accuracy = 0;
  for (int r = 0; r < 4; ++r) {
    const auto epochs = records(dir_ / ("m-" + std::to_string(r) + ".jsonl"), "epoch");
    ASSERT_EQ(epochs.size(), 4u) << "rank " << r;
    members_accuracy += epochs.back()["test_accuracy"].get<double>() / 4;
  }
  EXPECT_GT(members_accuracy, 0.75);
  for (int r : {4, 5}) {
    const auto file = dir_ / ("m-" + std::to_string(r) + ".jsonl");
    const auto epochs = records(file, "epoch");
    ASSERT_FALSE(epochs.empty()) << "rank " << r << ":\n" << joined.out;
    EXPECT_EQ(epochs.back()["epoch"], 4) << "rank " << r;
    EXPECT_NEAR(epochs.back()["test_accuracy"].get<double>(), members_accuracy, 0.02) << "rank " << r;
    // Each joiner's epoch ends at the members' steps.
    const auto member_epochs = records(dir_ / "m-0.jsonl", "epoch");
    for (const auto& e : epochs) {
      const int epoch = e["epoch"].get<int>();
      EXPECT_EQ(e["step"], member_epochs[static_cast<std::size_t>(epoch - 1)]["step"])
          << "rank " << r << " epoch " << epoch;
    }
  }
  // The members saw a view of all six.
  bool six = false;
  for (const auto& v : records(dir_ / "m-0.jsonl", "view")) six = six || v["members"].size() == 6;
  EXPECT_TRUE(six);
}

}  // namespace
