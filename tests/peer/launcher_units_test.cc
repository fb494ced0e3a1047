// The launcher's pure parts: shell quoting and the ssh template,
// rank placement, line splitting, the plain progress lines, the result table
// and the summary.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/subprocess.h"
#include "peer/events/peer_events.h"
#include "peer/launcher/console.h"
#include "peer/launcher/job_plan.h"
#include "peer/launcher/line_buffer.h"
#include "peer/launcher/remote_command.h"
#include "peer/launcher/report.h"

namespace murmur::peer::launcher {
namespace {

using events::ProgressEvent;
using events::ResultEvent;
using nlohmann::json;

// What /bin/sh makes of `line`: one word per output line.
std::vector<std::string> shell_words(const std::string& line) {
  char path[] = "/tmp/murmur-quote-XXXXXX";
  int fd = ::mkstemp(path);
  ::close(fd);
  Subprocess::Options o;
  o.argv = {"/bin/sh", "-c", "for w in " + line + "; do printf '%s\\n' \"$w\"; done"};
  o.stdout_path = path;
  Subprocess sh(o);
  sh.wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  std::ifstream in(path);
  std::vector<std::string> words;
  for (std::string w; std::getline(in, w);) words.push_back(w);
  std::filesystem::remove(path);
  return words;
}

TEST(RemoteCommand, QuotedWordsSurviveTheShell) {
  std::vector<std::string> words = {"plain", "two words", "it's", "$HOME", "`id`", "a\"b", "*", "", "x=1;y"};
  std::string line;
  for (const auto& w : words) line += shell_quote(w) + " ";
  EXPECT_EQ(shell_words(line), words);
  EXPECT_EQ(shell_quote("./murmur-peer"), "./murmur-peer");
}

TEST(RemoteCommand, CommandLineChangesDirectoryAndSetsTheEnvironment) {
  EXPECT_EQ(remote_command_line("/work/my dir", {"MURMUR_RANK=1", "MURMUR_TOKEN=a b"}, {"./peer", "--x", "it's"}),
            "cd '/work/my dir' && env MURMUR_RANK=1 'MURMUR_TOKEN=a b' ./peer --x 'it'\\''s'");
}

TEST(RemoteCommand, TemplateKeepsTheCommandOneArgument) {
  EXPECT_EQ(expand_ssh_template(kDefaultSshTemplate, "nodeA", "cd /x && env A=1 prog"),
            (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "nodeA", "cd /x && env A=1 prog"}));
  EXPECT_EQ(expand_ssh_template("ssh -p 2222 -o 'ProxyJump gw' u@{host} \"{command}\"", "n1", "c {host}"),
            (std::vector<std::string>{"ssh", "-p", "2222", "-o", "ProxyJump gw", "u@n1", "c {host}"}));
  EXPECT_THROW(expand_ssh_template("ssh {host}", "n", "c"), TemplateError);
  EXPECT_THROW(expand_ssh_template("ssh '{host} {command}", "n", "c"), TemplateError);
}

TEST(Placement, RanksFillHostsInOrder) {
  auto p = place_ranks(5, {{"nodeA", 2, 1}, {"nodeB", 2, 2}, {"nodeA", 4, 3}}, "hosts.txt");
  ASSERT_EQ(p.size(), 5u);
  std::vector<std::string> hosts;
  for (const auto& x : p) hosts.push_back(x.host);
  EXPECT_EQ(hosts, (std::vector<std::string>{"nodeA", "nodeA", "nodeB", "nodeB", "nodeA"}));
  EXPECT_EQ(p[4].local_rank, 2);
  EXPECT_EQ(p[4].local_size, 3);
  EXPECT_EQ(p[2].local_rank, 0);
  EXPECT_EQ(p[2].local_size, 2);
  EXPECT_FALSE(p[0].local);
  auto local = place_ranks(3, {}, "");
  EXPECT_EQ(local[2].host, "localhost");
  EXPECT_EQ(local[2].local_rank, 2);
  EXPECT_TRUE(local[2].local);
}

TEST(Placement, TooManyRanksNamesBothCounts) {
  try {
    place_ranks(5, {{"nodeA", 2, 1}, {"nodeB", 2, 2}}, "hosts.txt");
    FAIL() << "no error";
  } catch (const SlotError& e) {
    EXPECT_STREQ(e.what(), "-np 5 asks for 5 ranks but hosts.txt has only 4 slots (nodeA: 2, nodeB: 2)");
  }
}

TEST(Placement, ThisHostIsLocal) {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  EXPECT_TRUE(is_this_host(name));
  EXPECT_TRUE(is_this_host("127.0.0.1"));
  EXPECT_FALSE(is_this_host("nodeA-that-is-not-here"));
}

TEST(LineBuffer, SplitsAcrossReadsAndKeepsTheUnterminatedTail) {
  LineBuffer b(8);
  b.append("ab\ncd");
  EXPECT_EQ(b.next_line(), "ab");
  EXPECT_EQ(b.next_line(), std::nullopt);
  b.append("e\n\n0123456789");
  EXPECT_EQ(b.next_line(), "cde");
  EXPECT_EQ(b.next_line(), "");
  EXPECT_EQ(b.next_line(), "01234567");  // cut at max_line
  EXPECT_EQ(b.next_line(), std::nullopt);
  EXPECT_EQ(b.take_rest(), "89");
  EXPECT_EQ(b.take_rest(), std::nullopt);
}

// Everything a Console wrote to its stdout in plain mode.
class PlainConsole : public ::testing::Test {
 protected:
  void SetUp() override { out_ = std::tmpfile(); }
  void TearDown() override { std::fclose(out_); }
  std::string written() {
    std::fflush(out_);
    std::rewind(out_);
    std::string s;
    for (int c; (c = std::fgetc(out_)) != EOF;) s.push_back(static_cast<char>(c));
    return s;
  }
  std::FILE* out_ = nullptr;
};

TEST_F(PlainConsole, OneProgressLinePerPeerAndEpoch) {
  Console console(2, false, out_, out_);
  auto at = [](int rank, int epoch, int step) {
    return ProgressEvent{rank, epoch, 2, step, 3, 1.0 / epoch, 0.5, 1000000ULL * step};
  };
  for (int step = 1; step <= 3; ++step) console.progress(0, at(0, 1, step));  // completes epoch 1
  console.progress(1, at(1, 1, 1));
  console.progress(1, at(1, 2, 1));  // epoch 1 of rank 1 ended unseen at step 1
  console.progress(0, at(0, 2, 2));
  console.peer_line(0, false, "hello");
  console.peer_done(0);
  console.peer_done(1);
  EXPECT_EQ(written(),
            "[0] progress epoch 1/2 step 3/3 loss 1.0000 accuracy 0.5000 sent 3.0 MB\n"
            "[1] progress epoch 1/2 step 1/3 loss 1.0000 accuracy 0.5000 sent 1.0 MB\n"
            "[0] hello\n"
            "[0] progress epoch 2/2 step 2/3 loss 0.5000 accuracy 0.5000 sent 2.0 MB\n"
            "[1] progress epoch 2/2 step 1/3 loss 0.5000 accuracy 0.5000 sent 1.0 MB\n");
}

TEST(LiveProgress, ShowsTheSlowestPeerAndMeans) {
  std::vector<std::optional<ProgressEvent>> latest(3);
  EXPECT_EQ(live_progress_text(latest), "");
  latest[0] = ProgressEvent{0, 2, 5, 10, 100, 0.5, 0.75, 2000000};
  latest[2] = ProgressEvent{2, 1, 5, 90, 100, 0.3, std::nan(""), 500000};
  EXPECT_EQ(live_progress_text(latest),
            "epoch 1/5 step 90/100  loss 0.4000  accuracy 0.7500  sent 2.5 MB  (2/3 peers)");
}

std::vector<PeerRecord> two_peers() {
  json r0 = to_json(ResultEvent{0, 0.81, std::nan(""), 1500000, 2500000, 3.25});
  json r1 = to_json(ResultEvent{1, 0.83, 0.9, 500000, 500000, 3.5});
  r1["extra"] = 7;
  return {{0, "nodeA", r0}, {1, "nodeB", r1}, {2, "nodeB", std::nullopt}};
}

TEST(Report, TableHasEveryRankAndTheTotals) {
  EXPECT_EQ(format_result_table(two_peers(), 4.5),
            "rank  host    test acc     MB sent     MB recv    wall s\n"
            "   0  nodeA     0.8100        1.50        2.50      3.25\n"
            "   1  nodeB     0.8300        0.50        0.50      3.50\n"
            "   2  nodeB          -           -           -         -\n"
            "average model test accuracy: 0.9000\n"
            "total: 2.00 MB sent, 3.00 MB received by 3 peers; wall time 4.50 s\n");
}

TEST(Report, SummaryHoldsResultsByRank) {
  auto s = make_summary(two_peers(), 4.5, {"./peer", "--epochs", "2"});
  EXPECT_DOUBLE_EQ(s["average_model_test_accuracy"].get<double>(), 0.9);
  EXPECT_EQ(s["peer_test_accuracy"], json::parse("[0.81, 0.83, null]"));
  EXPECT_EQ(s["bytes_sent"], 2000000);
  EXPECT_EQ(s["bytes_received"], 3000000);
  EXPECT_EQ(s["peers"][1]["extra"], 7);
  EXPECT_TRUE(s["peers"][2].is_null());
  EXPECT_EQ(s["command"], json::parse(R"(["./peer", "--epochs", "2"])"));
  EXPECT_EQ(s["np"], 3);
  EXPECT_DOUBLE_EQ(s["wall_seconds"].get<double>(), 4.5);
}

TEST(Report, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  auto dir = std::filesystem::temp_directory_path() / ("murmur-report-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "summary.json").string();
  write_file_atomically(path, "old");
  write_file_atomically(path, "new contents\n");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "new contents\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
  EXPECT_THROW(write_file_atomically((dir / "missing" / "s.json").string(), "x"), std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace murmur::peer::launcher
