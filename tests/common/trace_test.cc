// trace::Session and its file: what is recorded, when nothing is, and the
// file's layout (the merge and the job test read it).
#include "common/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "tests/support/trace_events.h"

namespace murmur::trace {
namespace {

namespace fs = std::filesystem;

class TraceSession : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("murmur-trace-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  nlohmann::json read(const fs::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  }
  static int count(const nlohmann::json& trace, const std::string& name) {
    int n = 0;
    for (const auto& e : trace["traceEvents"]) n += e.value("name", "") == name ? 1 : 0;
    return n;
  }
  fs::path dir_;
};

TEST_F(TraceSession, NothingIsRecordedWithoutASession) {
  EXPECT_FALSE(enabled());
  { Scope span(Category::kCompute, "before"); }
  Session session((dir_ / "rank-{rank}.json").string());
  { Scope span(Category::kCompute, "during"); }
  session.set_process(3, "rank 3 (here)");
  const auto path = session.write();
  EXPECT_EQ(path, (dir_ / "rank-3.json").string());
  EXPECT_FALSE(enabled());
  { Scope span(Category::kCompute, "after"); }
  const auto trace = read(path);
  EXPECT_EQ(count(trace, "before"), 0);
  EXPECT_EQ(count(trace, "during"), 1);
  EXPECT_EQ(count(trace, "after"), 0);
}

TEST_F(TraceSession, TheFileHasTheClockOriginAndOneRowPerThread) {
  Session session((dir_ / "t.json").string());
  session.set_process(2, "rank 2 (node-7)");
  name_thread("main");
  {
    Scope outer(Category::kStep, "step");
    Scope inner(Category::kCompute, "forward_backward");
  }
  std::thread other([] {
    name_thread("gossip");
    Scope span(Category::kCompress, "encode");
    span.args().bytes = 1234;
  });
  other.join();
  instant(Category::kView, "view_adopted", {.detail = "generation 1: \"members\" [0,2]\n"});
  message(Category::kSend, now_ns(), now_ns(), {.peer = 1, .bytes = 8, .tag = 0x102, .detail = ""});
  session.write();

  const auto trace = read(dir_ / "t.json");
  const auto& other_data = trace["otherData"];
  EXPECT_EQ(other_data["rank"], 2);
  EXPECT_GT(other_data["origin_steady_ns"].get<std::int64_t>(), 0);
  EXPECT_GT(other_data["origin_unix_ns"].get<std::int64_t>(), 0);
  EXPECT_TRUE(other_data.contains("boot_id"));
  std::set<std::string> thread_names;
  std::set<long> tids;
  for (const auto& e : trace["traceEvents"]) {
    EXPECT_EQ(e["pid"], 2) << e.dump();
    if (e["name"] == "thread_name") thread_names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") tids.insert(e["tid"].get<long>());
    if (e["name"] == "process_name") {
      EXPECT_EQ(e["args"]["name"], "rank 2 (node-7)");
    }
    if (e["name"] == "encode") {
      EXPECT_EQ(e["args"]["bytes"], 1234);
    }
    if (e["name"] == "view_adopted") {
      EXPECT_EQ(e["args"]["detail"], "generation 1: \"members\" [0,2]\n");
    }
    if (e["name"] == "send to 1" && e["ph"] == "b") {
      EXPECT_EQ(e["args"]["tag"], "0x102");
      EXPECT_EQ(e["args"]["bytes"], 8);
    }
  }
  EXPECT_TRUE(thread_names.count("main") && thread_names.count("gossip")) << trace.dump();
  EXPECT_EQ(tids.size(), 2u);
  EXPECT_EQ(count(trace, "send to 1"), 2);  // its begin and its end
  EXPECT_TRUE(murmur::testing::nesting_problems(trace["traceEvents"]).empty());
}

TEST_F(TraceSession, ASecondSessionIsInertAndTheFirstKeepsRecording) {
  Session first((dir_ / "first.json").string());
  {
    Session second((dir_ / "second.json").string());
    EXPECT_FALSE(second.active());
    EXPECT_EQ(second.write(), "");
  }
  EXPECT_TRUE(enabled());
  { Scope span(Category::kCompute, "kept"); }
  first.write();
  EXPECT_FALSE(fs::exists(dir_ / "second.json"));
  EXPECT_EQ(count(read(dir_ / "first.json"), "kept"), 1);
}

TEST_F(TraceSession, EventsPastTheCapAreCountedAsDropped) {
  Session session((dir_ / "capped.json").string(), {.max_events = 5});
  for (int i = 0; i < 8; ++i) Scope span(Category::kCompute, "e");
  session.write();
  const auto trace = read(dir_ / "capped.json");
  EXPECT_EQ(count(trace, "e"), 5);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 3);
}

TEST_F(TraceSession, AnUnwritablePathIsNamed) {
  Session session("/nonexistent-dir/t.json");
  try {
    session.write();
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/t.json"), std::string::npos) << e.what();
  }
}

TEST(TraceChecks, CatchOverlappingSpansAndMessagesOutOfOrder) {
  // The checks the job test relies on must be able to fail.
  auto overlapping = nlohmann::json::parse(R"([
    {"ph":"X","pid":0,"tid":1,"ts":0,"dur":10,"name":"a"},
    {"ph":"X","pid":0,"tid":1,"ts":5,"dur":10,"name":"b"}])");
  EXPECT_EQ(murmur::testing::nesting_problems(overlapping).size(), 1u);
  auto nested = nlohmann::json::parse(R"([
    {"ph":"X","pid":0,"tid":1,"ts":0,"dur":10,"name":"a"},
    {"ph":"X","pid":0,"tid":1,"ts":5,"dur":5,"name":"b"},
    {"ph":"X","pid":0,"tid":2,"ts":5,"dur":50,"name":"c"}])");
  EXPECT_TRUE(murmur::testing::nesting_problems(nested).empty());
  auto early = nlohmann::json::parse(R"([
    {"ph":"b","pid":0,"id":"0x1","cat":"send","ts":100,"args":{"peer":1,"tag":"0x5"}},
    {"ph":"e","pid":0,"id":"0x1","cat":"send","ts":120,"args":{}},
    {"ph":"b","pid":1,"id":"0x1","cat":"recv","ts":10,"args":{"peer":0,"tag":"0x5"}},
    {"ph":"e","pid":1,"id":"0x1","cat":"recv","ts":90,"args":{}}])");
  int matched = 0;
  EXPECT_EQ(murmur::testing::message_order_problems(early, &matched).size(), 1u);
  EXPECT_EQ(matched, 1);
}

}  // namespace
}  // namespace murmur::trace
