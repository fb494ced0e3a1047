// murmur-run --trace: a real job of three murmur-peer processes writes its
// timelines, murmur-run merges them, and the merged file holds each peer's
// compute, compression, messages and waits, properly nested per thread, on
// one clock (no receive ends before its send began).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "peer/launcher/trace_merge.h"
#include "tests/support/program.h"
#include "tests/support/trace_events.h"

namespace {

namespace fs = std::filesystem;

std::string bin(const std::string& relative) { return std::string(MURMUR_BIN_DIR) + "/" + relative; }

class TrainTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("murmur-train-trace-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TrainTrace, AMergedJobTraceHasEveryPeersEventsNestedAndInClockOrder) {
  const auto trace_dir = dir_ / "trace";
  auto r = murmur::testing::run_program({bin("src/peer/launcher/murmur-run"),
                                         "-np",
                                         "3",
                                         "--timeout",
                                         "240",
                                         "--trace",
                                         trace_dir.string(),
                                         "--",
                                         bin("src/peer/train/murmur-peer"),
                                         "--algorithm",
                                         "choco",
                                         "--compress",
                                         "topk:0.05",
                                         "--topology",
                                         "ring",
                                         "--model",
                                         "mlp:32",
                                         "--epochs",
                                         "1",
                                         "--train-examples",
                                         "600",
                                         "--batch",
                                         "32"},
                                        std::chrono::seconds(280), /*merge_stderr=*/true);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("trace of 3 peers"), std::string::npos) << r.out;
  for (int rank = 0; rank < 3; ++rank) EXPECT_TRUE(fs::exists(trace_dir / ("rank-" + std::to_string(rank) + ".json")));

  std::ifstream in(trace_dir / "trace.json");
  const auto trace = nlohmann::json::parse(in);
  EXPECT_EQ(trace["otherData"]["peers"], 3);
  EXPECT_NE(trace["otherData"]["clock_alignment"].get<std::string>().find("steady"), std::string::npos);
  const auto& events = trace["traceEvents"];

  // What each peer recorded, by name, and its rows.
  std::map<int, std::map<std::string, int>> names;
  std::map<int, std::set<std::string>> threads;
  std::map<int, long> message_bytes;
  for (const auto& e : events) {
    const int pid = e["pid"].get<int>();
    names[pid][e["name"].get<std::string>()] += 1;
    if (e["name"] == "thread_name") threads[pid].insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "b") {
      EXPECT_GE(e["args"].value("peer", -1), 0) << e.dump();
      message_bytes[pid] += e["args"].value("bytes", 0L);
    }
    if (e.contains("ts")) {
      EXPECT_GE(e["ts"].get<double>(), 0) << e.dump();
    }
  }
  ASSERT_EQ(names.size(), 3u);      // pid = rank 0, 1, 2
  const long steps = 600 / 32 + 1;  // --train-examples caps each peer's shard
  for (int pid = 0; pid < 3; ++pid) {
    auto& n = names[pid];
    EXPECT_EQ(n["process_name"], 1) << pid;
    EXPECT_GE(n["step"], 5) << pid;
    EXPECT_LE(n["step"], steps) << pid;
    EXPECT_EQ(n["forward_backward"], n["step"]) << pid;
    EXPECT_EQ(n["optimizer"], n["step"]) << pid;
    EXPECT_GT(n["encode"], 0) << pid;
    EXPECT_GT(n["decode"], 0) << pid;
    EXPECT_GT(n["round"], 0) << pid;
    EXPECT_GT(n["wait_messages"], 0) << pid;
    EXPECT_GT(n["wait_for_round"], 0) << pid;
    // A ring of three: both neighbours, both directions.
    for (int other = 0; other < 3; ++other) {
      if (other == pid) continue;
      EXPECT_GT(n["send to " + std::to_string(other)], 0) << pid;
      EXPECT_GT(n["recv from " + std::to_string(other)], 0) << pid;
    }
    EXPECT_GT(message_bytes[pid], 0) << pid;
    EXPECT_TRUE(threads[pid].count("main") && threads[pid].count("gossip")) << pid;
  }

  const auto nesting = murmur::testing::nesting_problems(events);
  EXPECT_TRUE(nesting.empty()) << nesting.size() << " problems, first: " << nesting.front();
  int matched = 0;
  const auto order = murmur::testing::message_order_problems(events, &matched);
  EXPECT_TRUE(order.empty()) << order.size() << " problems, first: " << order.front();
  EXPECT_GT(matched, 10);  // sends matched to receives across processes
}

TEST_F(TrainTrace, APeerFileThatIsNotJsonIsNamedAndTheOthersAreMerged) {
  const auto trace_dir = dir_ / "trace";
  auto r = murmur::testing::run_program({bin("src/peer/launcher/murmur-run"),
                                         "-np",
                                         "2",
                                         "--timeout",
                                         "240",
                                         "--trace",
                                         trace_dir.string(),
                                         "--",
                                         bin("src/peer/train/murmur-peer"),
                                         "--algorithm",
                                         "dpsgd",
                                         "--topology",
                                         "ring",
                                         "--model",
                                         "logreg",
                                         "--epochs",
                                         "1",
                                         "--train-examples",
                                         "128",
                                         "--batch",
                                         "32"},
                                        std::chrono::seconds(280), /*merge_stderr=*/true);
  ASSERT_EQ(r.status, 0) << r.out;
  // A third file, truncated as by a peer killed while writing it.
  { std::ofstream(trace_dir / "rank-7.json") << "{\"traceEvents\":[{\"ph\":"; }
  const auto merged = murmur::peer::launcher::merge_traces(trace_dir.string());
  EXPECT_EQ(merged.peers, 2);
  ASSERT_EQ(merged.problems.size(), 1u);
  EXPECT_NE(merged.problems[0].find("rank-7.json"), std::string::npos) << merged.problems[0];
  EXPECT_NE(merged.problems[0].find("not JSON"), std::string::npos) << merged.problems[0];
  // No peer file at all: an error naming the directory.
  const auto empty = dir_ / "empty";
  fs::create_directories(empty);
  try {
    murmur::peer::launcher::merge_traces(empty.string());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(empty.string()), std::string::npos) << e.what();
  }
}

}  // namespace
