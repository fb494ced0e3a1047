#include "peer/launcher/membership.h"

#include <cmath>
#include <csignal>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace murmur::peer::launcher {

namespace {

using nlohmann::json;

std::string rank_list(const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  return fmt::format("{}", fmt::join(ranks, ","));
}

std::string stderr_tail(const PeerFailure& f) {
  return f.last_stderr.empty() ? "no stderr output" : "last stderr line: '" + f.last_stderr + "'";
}

std::string signal_name(int signo) {
  const char* abbrev = sigabbrev_np(signo);
  return abbrev ? std::string("SIG") + abbrev : std::to_string(signo);
}

json failure_json(const PeerRecord& peer, const PeerFailure& f) {
  json j{{"rank", peer.rank},
         {"host", peer.host},
         {"seconds", f.seconds},
         {"reason", f.reason},
         {"last_stderr", f.last_stderr}};
  if (f.exit_status) j["exit_status"] = *f.exit_status;
  if (f.signal) j["signal"] = signal_name(*f.signal);
  return j;
}

json number_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

}  // namespace

bool ViewLog::add(const events::ViewEvent& view, double seconds) {
  if (generations_.size() >= kMaxViewsKept) return false;
  if (!generations_.insert(view.generation).second) return false;
  views_.push_back({seconds, view});
  return true;
}

std::string describe_view(const ViewRecord& r) {
  const auto& v = r.view;
  return fmt::format("view {}: {} members, lost {}, joined {}, spectral gap {} (first from rank {})", v.generation,
                     v.members, rank_list(v.lost), rank_list(v.joined),
                     std::isfinite(v.spectral_gap) ? fmt::format("{:.4f}", v.spectral_gap) : "-", v.rank);
}

std::string describe_loss(const PeerRecord& peer) {
  const auto& f = *peer.lost;
  return fmt::format("rank {} ({}) lost after {:.2f} s: {}; {}", peer.rank, peer.host, f.seconds, f.reason,
                     stderr_tail(f));
}

std::string describe_restart(const PeerRecord& peer, std::size_t attempt) {
  const auto& f = peer.restarts.at(attempt - 1);
  return fmt::format("rank {} ({}) restarted (attempt {}) after {:.2f} s: {}; {}", peer.rank, peer.host, attempt,
                     f.seconds, f.reason, stderr_tail(f));
}

std::string format_membership(const std::vector<PeerRecord>& peers, const std::vector<ViewRecord>& views,
                              const FailurePolicy& policy) {
  int finished = 0;
  bool eventful = !views.empty();
  for (const auto& p : peers) {
    finished += p.finished;
    eventful = eventful || p.lost || !p.restarts.empty();
  }
  if (!eventful) return "";
  std::string out = fmt::format("finished: {} of {} peers (--min-np {}, --on-failure {})\n", finished, peers.size(),
                                policy.min_np, on_failure_name(policy.on_failure));
  for (const auto& p : peers) {
    for (std::size_t a = 1; a <= p.restarts.size(); ++a) out += describe_restart(p, a) + "\n";
  }
  for (const auto& p : peers) {
    if (p.lost) out += describe_loss(p) + "\n";
  }
  if (!views.empty()) out += fmt::format("view changes: {}\n", views.size());
  return out;
}

json membership_summary(const std::vector<PeerRecord>& peers, const std::vector<ViewRecord>& views,
                        const FailurePolicy& policy) {
  int finished = 0;
  json lost = json::array(), restarted = json::array(), joined = json::array(), view_list = json::array();
  for (const auto& p : peers) {
    finished += p.finished;
    if (p.lost) lost.push_back(failure_json(p, *p.lost));
    for (std::size_t a = 0; a < p.restarts.size(); ++a) {
      auto j = failure_json(p, p.restarts[a]);
      j["attempt"] = a + 1;
      restarted.push_back(std::move(j));
    }
  }
  for (const auto& r : views) {
    const auto& v = r.view;
    for (int rank : v.joined) joined.push_back({{"rank", rank}, {"generation", v.generation}, {"seconds", r.seconds}});
    view_list.push_back({{"generation", v.generation},
                         {"members", v.members},
                         {"lost", v.lost},
                         {"joined", v.joined},
                         {"spectral_gap", number_or_null(v.spectral_gap)},
                         {"seconds", r.seconds},
                         {"reported_by", v.rank}});
  }
  return json{{"on_failure", on_failure_name(policy.on_failure)},
              {"min_np", policy.min_np},
              {"max_restarts", policy.max_restarts},
              {"finished", finished},
              {"lost", lost},
              {"restarted", restarted},
              {"joined", joined},
              {"view_changes", views.size()},
              {"views", view_list}};
}

}  // namespace murmur::peer::launcher
