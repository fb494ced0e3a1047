// murmur-run's failure policy and membership reports, without processes:
// the decisions of failure_policy.h, the view log's de-duplication, and the
// lines and summary keys of membership.h.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "peer/launcher/console.h"
#include "peer/launcher/failure_policy.h"
#include "peer/launcher/membership.h"

namespace murmur::peer::launcher {
namespace {

using events::ViewEvent;
using nlohmann::json;

TEST(FailurePolicy, NamesRoundTripAndOthersAreRefused) {
  for (auto p : {OnFailure::kContinue, OnFailure::kStop, OnFailure::kRestart}) {
    EXPECT_EQ(parse_on_failure(on_failure_name(p)), p);
  }
  EXPECT_EQ(parse_on_failure("retry"), std::nullopt);
}

TEST(FailurePolicy, MinNpDefaultsToHalfRoundedUp) {
  EXPECT_EQ(default_min_np(1), 1);
  EXPECT_EQ(default_min_np(4), 2);
  EXPECT_EQ(default_min_np(5), 3);
}

TEST(FailurePolicy, RestartUntilMaxRestartsThenLose) {
  FailurePolicy restart{OnFailure::kRestart, 1, 2};
  EXPECT_EQ(action_for_failure(restart, 0), FailureAction::kRestart);
  EXPECT_EQ(action_for_failure(restart, 1), FailureAction::kRestart);
  EXPECT_EQ(action_for_failure(restart, 2), FailureAction::kLose);
  EXPECT_EQ(action_for_failure({OnFailure::kContinue, 1, 5}, 0), FailureAction::kLose);
  EXPECT_EQ(action_for_failure({OnFailure::kStop, 1, 5}, 0), FailureAction::kStopJob);
}

TEST(FailurePolicy, PeersThatFinishedCountTowardsMinNp) {
  FailurePolicy p{OnFailure::kContinue, 3, 0};
  EXPECT_TRUE(can_still_succeed(p, 0, 3));
  EXPECT_TRUE(can_still_succeed(p, 2, 1));
  EXPECT_FALSE(can_still_succeed(p, 1, 1));
}

TEST(ViewLog, KeepsTheFirstReportOfEachGeneration) {
  ViewLog log;
  EXPECT_TRUE(log.add(ViewEvent{1, 4, 3, {2}, {}, 0.5}, 1.0));
  EXPECT_FALSE(log.add(ViewEvent{0, 4, 3, {2}, {}, 0.5}, 1.1));
  EXPECT_TRUE(log.add(ViewEvent{0, 5, 4, {}, {2}, std::nan("")}, 2.0));
  ASSERT_EQ(log.views().size(), 2u);
  EXPECT_EQ(log.views()[0].view.rank, 1);
  EXPECT_EQ(describe_view(log.views()[0]),
            "view 4: 3 members, lost 2, joined none, spectral gap 0.5000 (first from rank 1)");
  EXPECT_EQ(describe_view(log.views()[1]),
            "view 5: 4 members, lost none, joined 2, spectral gap - (first from rank 0)");
}

std::vector<PeerRecord> eventful_peers() {
  std::vector<PeerRecord> peers(3);
  for (int r = 0; r < 3; ++r) peers[r].rank = r, peers[r].host = "nodeA";
  peers[0].finished = true;
  peers[1].finished = true;
  peers[1].restarts.push_back({0.5, "killed by signal 9 (Killed)", std::nullopt, 9, ""});
  peers[2].lost = PeerFailure{1.25, "exited with status 3", 3, std::nullopt, "oom"};
  return peers;
}

TEST(Membership, LinesSayWhoFinishedRestartedAndWasLost) {
  std::vector<ViewRecord> views{{1.5, ViewEvent{0, 1, 2, {2}, {}, 1.0}}};
  EXPECT_EQ(format_membership(eventful_peers(), views, {OnFailure::kRestart, 2, 1}),
            "finished: 2 of 3 peers (--min-np 2, --on-failure restart)\n"
            "rank 1 (nodeA) restarted (attempt 1) after 0.50 s: killed by signal 9 (Killed); no stderr output\n"
            "rank 2 (nodeA) lost after 1.25 s: exited with status 3; last stderr line: 'oom'\n"
            "view changes: 1\n");
  std::vector<PeerRecord> quiet(2);
  EXPECT_EQ(format_membership(quiet, {}, {}), "");
}

TEST(Membership, SummaryListsLostRestartedJoinedAndViews) {
  std::vector<ViewRecord> views{{1.5, ViewEvent{0, 1, 2, {2}, {}, 1.0}}, {3.0, ViewEvent{1, 2, 3, {}, {2}, 0.5}}};
  auto s = membership_summary(eventful_peers(), views, {OnFailure::kRestart, 2, 1});
  EXPECT_EQ(s["on_failure"], "restart");
  EXPECT_EQ(s["min_np"], 2);
  EXPECT_EQ(s["max_restarts"], 1);
  EXPECT_EQ(s["finished"], 2);
  EXPECT_EQ(s["lost"], json::parse(R"([{"rank":2,"host":"nodeA","seconds":1.25,"reason":"exited with status 3",
                                        "exit_status":3,"last_stderr":"oom"}])"));
  EXPECT_EQ(s["restarted"][0]["signal"], "SIGKILL");
  EXPECT_EQ(s["restarted"][0]["attempt"], 1);
  EXPECT_EQ(s["joined"], json::parse(R"([{"rank":2,"generation":2,"seconds":3.0}])"));
  EXPECT_EQ(s["view_changes"], 2);
  EXPECT_EQ(s["views"][1]["reported_by"], 1);
}

TEST(LiveProgress, ShowsLiveAndLostCountsOnceAPeerIsLost) {
  std::vector<std::optional<events::ProgressEvent>> latest(3);
  latest[0] = events::ProgressEvent{0, 1, 5, 10, 100, 0.5, 0.75, 1000000};
  EXPECT_EQ(live_progress_text(latest, {2, 1}),
            "epoch 1/5 step 10/100  loss 0.5000  accuracy 0.7500  sent 1.0 MB  (2 live, 1 lost)");
  EXPECT_EQ(live_progress_text(latest, {3, 0}),
            "epoch 1/5 step 10/100  loss 0.5000  accuracy 0.7500  sent 1.0 MB  (1/3 peers)");
}

}  // namespace
}  // namespace murmur::peer::launcher
