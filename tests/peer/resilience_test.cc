// Peers that die, stall and come back, at small scale: jobs of
// resilience_test_peer processes (the public Peer API) around a rendezvous,
// with real signals. The full scenarios (8 peers, training, timings) come
// from bench/resilience/chaos.py; docs/resilience.md has both.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/local_job.h"

namespace murmur {
namespace {

using namespace std::chrono_literals;

bool exited_ok(const std::optional<int>& status) { return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0; }

// The last "<key> <value>" line of a rank's output.
std::string last_value(const std::string& output, const std::string& key) {
  std::string value;
  std::regex line("(^|\\n)" + key + " ([^\\n]*)");
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) value = (*it)[2];
  return value;
}

struct Outcome {
  std::vector<std::optional<int>> statuses;
  std::vector<std::string> outputs;
};

// Runs `size` peers; once rank `victim` has printed "step <at>", sends it
// `signal` (and SIGCONT after `stopped_for` when the signal is SIGSTOP).
Outcome run_with_fault(int size, const std::vector<std::string>& args, int victim, int at, int signal,
                       std::chrono::milliseconds stopped_for = 0ms) {
  testing::LocalJob job("tests/peer/resilience_test_peer", size, args, std::chrono::milliseconds(3000));
  EXPECT_TRUE(job.wait_for_output(victim, "step " + std::to_string(at) + "\n", 120s)) << job.output(victim);
  job.kill(victim, signal);
  if (signal == SIGSTOP) {
    std::this_thread::sleep_for(stopped_for);  // the fault itself: a process stopped this long
    job.kill(victim, SIGCONT);
  }
  Outcome o;
  o.statuses = job.wait_all(180s);
  for (int r = 0; r < size; ++r) o.outputs.push_back(job.output(r));
  return o;
}

void expect_survivors_agree(const Outcome& o, int victim, const std::string& members) {
  for (int r = 0; r < static_cast<int>(o.outputs.size()); ++r) {
    if (r == victim) continue;
    ASSERT_TRUE(exited_ok(o.statuses[r])) << "rank " << r << ":\n" << o.outputs[r];
    EXPECT_NE(o.outputs[r].find("members=" + members), std::string::npos) << o.outputs[r];
    EXPECT_LT(std::stod(last_value(o.outputs[r], "done")), 1e-3) << "rank " << r << ":\n" << o.outputs[r];
  }
}

class KilledPeer : public ::testing::TestWithParam<std::string> {};

// Scenario 1 at small scale: one of four peers is SIGKILLed mid-run; the
// other three adopt the view without it, finish, and agree (the consensus
// distance over the live view is small at the end). The gradient methods'
// models start apart (resilience_test_peer.cc) and agree only because the
// view re-averages them. The victim, rank 2, is one of the parameter
// servers' four servers (every member serves by default): its shards move
// to the survivors.
TEST_P(KilledPeer, SurvivorsAdoptTheViewAndFinish) {
  const std::string algorithm = GetParam();
  std::vector<std::string> args = {"--algorithm", algorithm, "--steps", "400"};
  if (algorithm == "choco") args.insert(args.end(), {"--compressor", "topk:0.3"});
  if (algorithm == "sgp") args.insert(args.end(), {"--topology", "one-peer-exponential"});
  if (algorithm == "topk-allreduce") args.insert(args.end(), {"--compressor", "topk:0.1"});
  auto o = run_with_fault(4, args, /*victim=*/2, /*at=*/100, SIGKILL);
  expect_survivors_agree(o, 2, "0,1,3");
}

INSTANTIATE_TEST_SUITE_P(Algorithms, KilledPeer,
                         ::testing::Values("dpsgd", "choco", "sgp", "adpsgd", "allreduce", "topk-allreduce",
                                           "local-sgd", "bsp-a2a", "wfbp-a2a", "mg-wfbp", "bytescheduler-a2a", "bsp-ps",
                                           "wfbp-ps", "bytescheduler-ps", "signsgd", "topk-sgd"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// Scenario 3 at small scale: a peer stopped for 6 s (its heartbeats stop
// too) is declared lost after the derived deadline; the others go on; when
// it continues it learns that it is out and exits with a clear message.
TEST(StoppedPeer, IsDeclaredLostAndToldWhenItWakesUp) {
  auto o = run_with_fault(4, {"--algorithm", "dpsgd", "--steps", "400"}, 1, 100, SIGSTOP, 6000ms);
  expect_survivors_agree(o, 1, "0,2,3");
  EXPECT_FALSE(exited_ok(o.statuses[1]));
  EXPECT_NE(o.outputs[1].find("not in the job's membership view"), std::string::npos) << o.outputs[1];
}

// Scenario 9 at small scale: a slow peer that lives (heartbeats on time)
// is waited for, not declared lost.
TEST(SlowPeer, IsWaitedForNotDeclaredLost) {
  testing::LocalJob job("tests/peer/resilience_test_peer", 3,
                        {"--algorithm", "dpsgd", "--steps", "60", "--lost-peer-floor", "0.2"});
  // Rank 2 is held in slices of 400 ms, each far past the others' derived
  // deadline (floor 0.2 s) but shorter than the heartbeat window (3 s): they
  // report it as silent, the membership service finds its heartbeats on
  // time and answers "alive", and they keep waiting.
  ASSERT_TRUE(job.wait_for_output(2, "step 20\n", 120s)) << job.output(2);
  for (int k = 0; k < 6; ++k) {
    job.kill(2, SIGSTOP);
    std::this_thread::sleep_for(400ms);  // the fault itself: shorter than heartbeat_stale
    job.kill(2, SIGCONT);
    std::this_thread::sleep_for(100ms);  // not a wait: rank 2 runs a little between stops
  }
  auto statuses = job.wait_all(120s);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(exited_ok(statuses[r])) << job.describe(r, statuses[r]);
    EXPECT_EQ(last_value(job.output(r), "generation"), "0") << job.output(r);
  }
}

// A rank that is alive but does not come to a collective (a program whose
// ranks do not make the same collectives) is named in the error of the
// ranks that waited for it, once the timeout passes: which rank, which
// collective, and the usual cause. (The error was the last 200 ms wait's:
// a rendezvous key "timed out after 199 ms".) --timeout 6 is also the
// rounds' ceiling: a round held up that long by load alone would expel a
// rank and fail this test another way (2 s did under a load average of 20).
TEST(Collectives, ARankThatDoesNotComeIsNamedAfterTheTimeout) {
  testing::LocalJob job(
      "tests/peer/resilience_test_peer", 3,
      {"--algorithm", "dpsgd", "--steps", "40", "--mean-every", "20", "--timeout", "6", "--absent-mean-rank", "1"});
  for (int r : {0, 2}) {
    ASSERT_TRUE(job.wait_for_output(r, "error ", 120s)) << job.output(r);
    const std::string error = last_value(job.output(r), "error");
    EXPECT_NE(error.find("average(): rank 1 ("), std::string::npos) << job.output(r);
    EXPECT_NE(error.find("did not take part within 6 s"), std::string::npos) << job.output(r);
    for (const char* present : {"rank 0 (", "rank 2 ("}) EXPECT_EQ(error.find(present), std::string::npos) << error;
  }
  EXPECT_NE(job.output(1).find("absent from mean 19"), std::string::npos) << job.output(1);
}

// Scenario 4 at small scale: the rendezvous is lost after start, then a
// peer; the standby takes over and the survivors still agree on a view.
TEST(LostRendezvous, ThenAPeerTheSurvivorsStillChangeView) {
  testing::LocalJob job("tests/peer/resilience_test_peer", 4, {"--algorithm", "dpsgd", "--steps", "500"});
  ASSERT_TRUE(job.wait_for_output(3, "step 60\n", 120s)) << job.output(3);
  job.stop_rendezvous();
  ASSERT_TRUE(job.wait_for_output(3, "step 200\n", 120s)) << job.output(3);
  job.kill(3, SIGKILL);
  auto statuses = job.wait_all(180s);
  Outcome o{statuses, {}};
  for (int r = 0; r < 4; ++r) o.outputs.push_back(job.output(r));
  expect_survivors_agree(o, 3, "0,1,2");
}

// Whatever started the peers: a job started without murmur-run (srun,
// mpirun, torchrun) hosts its rendezvous in rank 0. Killing rank 0 takes
// the server and rank 0's standby with it; the others fail over to rank
// 1's standby, three of the four reach it (a quorum), and they finish
// without rank 0.
TEST(RendezvousInRankZero, KilledWithItsRankTheOthersFinish) {
  testing::LocalJob job("tests/peer/resilience_test_peer", 4, {"--algorithm", "dpsgd", "--steps", "400"},
                        testing::LocalJob::Rendezvous::kInRankZero);
  ASSERT_TRUE(job.wait_for_output(0, "step 100\n", 120s)) << job.output(0);
  job.kill(0, SIGKILL);
  Outcome o{job.wait_all(180s), {}};
  for (int r = 0; r < 4; ++r) o.outputs.push_back(job.output(r));
  expect_survivors_agree(o, 0, "1,2,3");
  EXPECT_NE(o.outputs[1].find("rank 1's standby"), std::string::npos) << o.outputs[1];
}

// Scenario 6 at small scale: sgp over 6 ranks, two killed; the live ranks'
// ratios agree to 1e-6 (mass held by the lost ranks is lost; what the live
// ones hold is conserved among them: docs/resilience.md, "sgp's mass").
TEST(SgpConsensus, LiveRanksAgreeAfterTwoAreKilled) {
  testing::LocalJob job("tests/peer/resilience_test_peer", 6,
                        {"--algorithm", "sgp", "--topology", "exponential", "--steps", "600"});
  ASSERT_TRUE(job.wait_for_output(4, "step 100\n", 120s)) << job.output(4);
  job.kill(4, SIGKILL);
  ASSERT_TRUE(job.wait_for_output(5, "step 200\n", 120s)) << job.output(5);
  job.kill(5, SIGKILL);
  auto statuses = job.wait_all(180s);
  std::vector<double> values;
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(exited_ok(statuses[r])) << job.describe(r, statuses[r]);
    values.push_back(std::stod(last_value(job.output(r), "value")));
  }
  for (double v : values) EXPECT_NEAR(v, values[0], 1e-6);
}

// Scenarios 2 and 8 at small scale: a peer killed mid-run is replaced by a
// new process that joins the running job (as murmur-run --on-failure
// restart and --join start them), takes a member's model and step, and all
// end in agreement with it.
TEST(JoiningPeer, ReplacesAKilledOneAndAgrees) {
  testing::LocalJob job("tests/peer/resilience_test_peer", 4, {"--algorithm", "dpsgd", "--steps", "500"});
  ASSERT_TRUE(job.wait_for_output(2, "step 100\n", 120s)) << job.output(2);
  job.kill(2, SIGKILL);
  ASSERT_TRUE(job.wait_for_output(0, "members=0,1,3", 60s)) << job.output(0);
  const int joiner = job.spawn_joiner({"--algorithm", "dpsgd", "--steps", "500", "--join"});
  auto statuses = job.wait_all(180s);
  for (int r : {0, 1, 3, joiner}) {
    ASSERT_TRUE(exited_ok(statuses[r])) << job.describe(r, statuses[r]);
    EXPECT_LT(std::stod(last_value(job.output(r), "done")), 1e-3) << job.output(r);
  }
  EXPECT_NE(job.output(joiner).find("joined at"), std::string::npos) << job.output(joiner);
  // The new member has a new rank (ranks are never reused): 4.
  EXPECT_NE(job.output(0).find("members=0,1,3,4"), std::string::npos) << job.output(0);
}

// Every "<key> S M" line of a rank's output, as S -> M.
std::map<int, std::string> values_by_step(const std::string& output, const std::string& key) {
  std::map<int, std::string> out;
  std::regex line("(^|\\n)" + key + " (\\d+) ([^\\n]*)");
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it)
    out[std::stoi((*it)[2])] = (*it)[3];
  return out;
}

// Two peers join one right after the other (scenario 8 of docs/resilience.md):
// both are admitted, in turn or together, and every collective mid-run (all
// at the same step everywhere) agrees.
//
// --mean-at-joins makes every rank call a collective right after each step
// at which a view admitted members, so one always follows the step each
// joiner enters in, whichever rounds the two views take effect at (apart or
// together). A joiner's first step() is the members' step it enters in: it
// must take part in that step's collective. When the test peer's joiner
// skipped it (it continued at the next step), the members waited in the
// collective's gather for the joiner while the joiner waited in the next
// round for them, until the 30 s timeout failed everyone: that hang was
// seen only when a view happened to take effect at a --mean-every step.
class JoiningPeers : public ::testing::TestWithParam<std::string> {};

TEST_P(JoiningPeers, TwoInQuickSuccessionBothEnter) {
  std::vector<std::string> args = {"--algorithm",  GetParam(), "--steps",        "600",
                                   "--mean-every", "100",      "--mean-at-joins"};
  if (GetParam() == "choco") args.insert(args.end(), {"--compressor", "topk:0.3"});
  testing::LocalJob job("tests/peer/resilience_test_peer", 4, args);
  ASSERT_TRUE(job.wait_for_output(0, "step 100\n", 120s)) << job.output(0);
  auto joiner_args = args;
  joiner_args.push_back("--join");
  const int first = job.spawn_joiner(joiner_args);
  const int second = job.spawn_joiner(joiner_args);
  auto statuses = job.wait_all(240s);
  for (int r : {0, 1, 2, 3, first, second}) {
    EXPECT_TRUE(exited_ok(statuses[r])) << job.describe(r, statuses[r]);
    if (!exited_ok(statuses[r])) continue;
    EXPECT_LT(std::stod(last_value(job.output(r), "done")), 1e-3) << job.output(r);
    // Every rank that took part in a collective was at its step: the mean
    // of the step counters is that step.
    for (const auto& [step, mean] : values_by_step(job.output(r), "join-mean"))
      EXPECT_EQ(mean, std::to_string(step)) << "rank " << r << ":\n" << job.output(r);
  }
  EXPECT_NE(job.output(0).find("members=0,1,2,3,4,5"), std::string::npos) << job.output(0);
  // Each joiner made the collective of the step it entered in, with the
  // members (who made one at each step a view admitted someone).
  const auto members_join_means = values_by_step(job.output(0), "join-mean");
  EXPECT_FALSE(members_join_means.empty()) << job.output(0);
  for (int r : {first, second}) {
    const std::string entered = last_value(job.output(r), "joined at");
    ASSERT_FALSE(entered.empty()) << job.output(r);
    const int step = std::stoi(entered);
    EXPECT_EQ(values_by_step(job.output(r), "join-mean").count(step), 1u) << job.output(r);
    EXPECT_EQ(members_join_means.count(step), 1u) << "rank " << r << " entered at step " << step << "\n"
                                                  << job.output(0);
  }
  // Every collective at step 599 gave the same mean everywhere.
  const std::string final_mean = last_value(job.output(0), "mean 599");
  for (int r : {first, second}) EXPECT_EQ(last_value(job.output(r), "mean 599"), final_mean) << job.output(r);
}

// wfbp-a2a: a gradient method, whose members re-average their models when
// the joiners enter (gradient_algorithm.h); wfbp-ps also re-shards over the
// joiners' servers.
INSTANTIATE_TEST_SUITE_P(Algorithms, JoiningPeers, ::testing::Values("dpsgd", "choco", "wfbp-a2a", "wfbp-ps"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace murmur
