// What murmur-run records and reports about a job's membership under
// --on-failure continue or restart: the peers lost and restarted
// (PeerRecord's fields, report.h) and the gossip view changes the peers
// announce with "view" events (peer_events.h).
//
// Every surviving peer announces the same view generation; ViewLog keeps the
// first announcement of each, so murmur-run shows and counts a change once.
// It keeps at most kMaxViewsKept generations: a peer that announces more
// (peer output is not trusted) only makes the later ones uncounted.
//
// Not thread-safe (the launcher's event loop owns it); pure functions are.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "peer/events/peer_events.h"
#include "peer/launcher/failure_policy.h"
#include "peer/launcher/report.h"

namespace murmur::peer::launcher {

struct ViewRecord {
  double seconds = 0;      // when murmur-run first saw it, since the job started
  events::ViewEvent view;  // view.rank: the peer that announced it first
};

class ViewLog {
 public:
  static constexpr std::size_t kMaxViewsKept = 10000;

  // Records `view` unless its generation was seen before (or the log is
  // full). True when it is new: show it.
  bool add(const events::ViewEvent& view, double seconds);
  // In the order first seen.
  const std::vector<ViewRecord>& views() const { return views_; }

 private:
  std::set<std::uint64_t> generations_;
  std::vector<ViewRecord> views_;
};

// "view 3: 3 members, lost 2, joined none, spectral gap 0.4200 (first from rank 0)"
std::string describe_view(const ViewRecord& record);

// "rank 2 (nodeB) lost after 1.25 s: exited with status 3; last stderr line: 'oom'"
std::string describe_loss(const PeerRecord& peer);
// "rank 1 (nodeA) restarted (attempt 1) after 0.50 s: killed by signal 9 (Killed); no stderr output"
std::string describe_restart(const PeerRecord& peer, std::size_t attempt);

// Lines for the end of the job, after the result table: how many peers
// finished out of how many and of --min-np, then each restart and loss, and
// the number of view changes. "" when nothing was lost, restarted or
// changed (the table says it all).
std::string format_membership(const std::vector<PeerRecord>& peers, const std::vector<ViewRecord>& views,
                              const FailurePolicy& policy);

// The summary's membership keys: "on_failure", "min_np", "max_restarts",
// "finished" (count), "lost" and "restarted" (objects with rank, host,
// seconds, reason, exit_status or signal, last_stderr; restarted ones also
// attempt), "joined" (rank, generation, seconds: from the views),
// "view_changes" (count) and "views" (generation, members, lost, joined,
// spectral_gap, seconds, reported_by).
nlohmann::json membership_summary(const std::vector<PeerRecord>& peers, const std::vector<ViewRecord>& views,
                                  const FailurePolicy& policy);

}  // namespace murmur::peer::launcher
