#include "peer/api/membership.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/log.h"
#include "common/text.h"
#include "common/trace.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/client.h"
#include "gossip/algorithm/gossip_setup.h"
#include "gossip/topology/view_topology.h"

namespace murmur::peer {
namespace {

gossip::View to_gossip_view(const fabric::MembershipView& view) {
  gossip::View v;
  v.generation = view.generation;
  for (const auto& m : view.members) v.members.push_back(m.rank);
  std::sort(v.members.begin(), v.members.end());
  return v;
}

std::string view_prefix(std::uint64_t generation) { return "murmur/view/" + std::to_string(generation) + "/"; }

// One gather attempt's wait: short, so that a superseded agreement is
// noticed within it.
constexpr std::chrono::milliseconds kAttempt{200};

}  // namespace

Membership::Membership(fabric::Group& group, Options options)
    : group_(group), options_(std::move(options)), deadline_(options_.deadline) {
  const fabric::MembershipView entered = group_.entry_view();
  entry_ = to_gossip_view(entered);
  const gossip::View& entry = entry_;
  // A joiner's gate starts in the view before the one that admitted it (the
  // same members without those it admitted: one joiner, or several whose
  // admits the rendezvous handled together), so that it takes part in that
  // view's agreement and enters at its first round (view_gate.h).
  gossip::View initial = entry;
  if (options_.joining) {
    initial.generation = entry.generation == 0 ? 0 : entry.generation - 1;
    std::erase(initial.members, group_.rank());
    for (int joined : entered.joined) std::erase(initial.members, joined);
  }
  committed_.push_back(initial);
  ViewEvent first;
  first.generation = initial.generation;
  first.members = initial.members;
  first.spectral_gap = std::numeric_limits<double>::quiet_NaN();
  history_.push_back(first);
  gate_ = std::make_unique<gossip::ViewGate>(
      initial, group_.rank(),
      [this](const gossip::View& proposed, std::uint64_t report, const std::function<bool()>& abandon) {
        return agree(proposed, report, abandon);
      },
      [this](const gossip::View& from, const gossip::View& to) { return prepare(from, to); });
  group_.on_view([this](const fabric::MembershipView& view, const std::vector<fabric::Group::LostPeer>& lost) {
    on_group_view(view, lost);
  });
  // Views that came between entry and the registration above reached no
  // callback: propose the entry view and the current one (the gate ignores
  // a generation it knows, so a view also delivered by the callback counts
  // once). Only the reasons of views in between are not logged here.
  if (options_.joining) gate_->propose(entry, "");
  const fabric::MembershipView now = group_.view();
  if (now.generation > entry.generation) on_group_view(now, {});
}

void Membership::on_join(JoinHook hook) {
  std::lock_guard lock(mutex_);
  join_hook_ = std::move(hook);
}

Membership::~Membership() {
  group_.on_view(nullptr);
  gate_.reset();  // stops its thread before the members it uses go
}

void Membership::on_group_view(const fabric::MembershipView& view, const std::vector<fabric::Group::LostPeer>& lost) {
  std::string reasons;
  {
    std::lock_guard lock(mutex_);
    for (const auto& l : lost) {
      departures_.push_back({l.rank, l.host, l.reason});
      const std::string entry = "rank " + std::to_string(l.rank) + " (" + l.host + "): " + l.reason;
      // This member's own reason first: when it is out, that is the why
      // its error leads with (a server standing down lists everyone).
      if (l.rank == group_.rank()) {
        reasons = entry + (reasons.empty() ? "" : "; " + reasons);
      } else {
        reasons += (reasons.empty() ? "" : "; ") + entry;
      }
    }
  }
  const gossip::View next = to_gossip_view(view);
  if (trace::enabled())
    trace::instant(trace::Category::kView, "view_announced",
                   {.detail = "generation " + std::to_string(next.generation) +
                              (reasons.empty() ? std::string() : ": lost " + reasons)});
  if (!next.contains(group_.rank()) && !options_.joining) expelled(next.generation, reasons);
  gate_->propose(next, reasons);
}

// This member is out of the job (it was stopped or cut off past the
// deadline, and the others went on): nothing it waits for will come, since
// every member failed its links to it. Failing its own links ends any wait
// in progress at once, instead of at the ceiling, and the gossip's next
// call reports why (view_gate.h).
void Membership::expelled(std::uint64_t generation, const std::string& reasons) {
  const std::string why = "this member is not in the job's membership view " + std::to_string(generation) +
                          (reasons.empty() ? "" : " (" + reasons + ")");
  peer_log().error("{}", why);
  for (const auto& p : group_.peers()) {
    if (p.rank < 0 || p.rank == group_.rank()) continue;
    group_.transport().fail_peer(p.rank, std::make_exception_ptr(fabric::PeerError(p.rank, p.host, why)));
  }
}

std::optional<std::vector<std::uint64_t>> Membership::agree(const gossip::View& proposed, std::uint64_t report,
                                                            const std::function<bool()>& abandon) {
  auto& control = group_.control();
  const std::string prefix = view_prefix(proposed.generation);
  control.set(prefix + std::to_string(proposed.position(group_.rank())), std::to_string(report));
  const auto give_up = std::chrono::steady_clock::now() + options_.agreement_timeout;
  bool last_try = false;
  for (;;) {
    std::vector<std::string> values;
    try {
      values = control.gather(prefix, static_cast<std::uint32_t>(proposed.size()), kAttempt);
    } catch (const fabric::FabricError&) {
      // Incomplete for now. Once a later view drops a member of this one,
      // one more try sees any report that member made before it was lost
      // (the service ordered its write before the loss); after that it
      // cannot report any more (writes from non-members are refused).
      if (last_try) return std::nullopt;
      if (abandon()) last_try = true;
      if (std::chrono::steady_clock::now() > give_up)
        throw std::runtime_error("membership: the members of view " + std::to_string(proposed.generation) +
                                 " did not all report within " +
                                 std::to_string(options_.agreement_timeout.count() / 1000) + " s");
      continue;
    }
    std::vector<std::uint64_t> reports;
    for (std::size_t k = 0; k < values.size(); ++k) {
      std::uint64_t r = 0;
      if (!parse_number(values[k], r)) {
        const int member = proposed.members[k];
        throw std::runtime_error("membership: rank " + std::to_string(member) + " (" + group_.peers()[member].host +
                                 ") reported '" + values[k] + "' for view " + std::to_string(proposed.generation) +
                                 ", not a round number");
      }
      reports.push_back(r);
    }
    {
      std::lock_guard lock(mutex_);
      committed_.push_back(proposed);
    }
    committed_cv_.notify_all();
    return reports;
  }
}

std::shared_ptr<const gossip::Topology> Membership::topology_for(const gossip::View& view, std::string* description,
                                                                 double* spectral_gap) const {
  *spectral_gap = std::numeric_limits<double>::quiet_NaN();
  if (!options_.topology) {
    *description = "no graph (" + options_.gossip.algorithm + ")";
    return nullptr;
  }
  // Members that joined have ranks past the job's graph: a generator's job
  // graph is made again over every rank so far (a graph file cannot grow, so
  // such jobs refuse joins: peer.cc).
  std::shared_ptr<const gossip::Topology> full = options_.topology;
  const int ranks = std::max(view.members.back() + 1, static_cast<int>(group_.peers().size()));
  if (view.members.back() >= full->size()) full = gossip::make_gossip_topology(options_.gossip, ranks);
  auto built = gossip::topology_for_view(options_.gossip, *full, view.members);
  *description = built.description;
  *spectral_gap = built.spectral_gap;
  std::shared_ptr<const gossip::Topology> positions = std::move(built.topology);
  return std::make_shared<gossip::MemberTopology>(positions, view.members, ranks);
}

gossip::ViewChange Membership::prepare(const gossip::View& from, const gossip::View& to) {
  gossip::ViewChange change;
  change.view = to;
  ViewEvent event;
  event.generation = to.generation;
  event.members = to.members;
  change.topology = topology_for(to, &event.topology, &event.spectral_gap);
  for (int m : from.members)
    if (!to.contains(m)) change.lost.push_back(m);
  for (int m : to.members)
    if (!from.contains(m)) change.joined.push_back(m);
  event.joined = change.joined;
  std::function<void(const ViewEvent&)> listener;
  {
    std::lock_guard lock(mutex_);
    for (int m : change.lost) {
      auto it = std::find_if(departures_.rbegin(), departures_.rend(), [m](const auto& d) { return d.rank == m; });
      event.lost.push_back(it != departures_.rend() ? *it
                                                    : ViewEvent::Departure{m, group_.peers()[m].host, "left the view"});
    }
    history_.push_back(event);
    listener = listener_;
    if (!change.joined.empty() && join_hook_) {
      change.exchange_params = [hook = join_hook_, members = to.members, joined = change.joined](
                                   std::span<float> params, std::uint64_t first_round) {
        hook(members, joined, params, first_round);
      };
    }
  }
  peer_log().warn("membership view {}: {} members; {}", to.generation, to.size(), event.topology);
  if (trace::enabled()) {
    std::string members;
    for (int m : to.members) members += (members.empty() ? "" : ",") + std::to_string(m);
    trace::instant(
        trace::Category::kView, "view_adopted",
        {.detail = "generation " + std::to_string(to.generation) + ": members [" + members + "]; " + event.topology});
  }
  if (listener) listener(event);
  return change;
}

std::vector<gossip::View> Membership::committed_after(std::uint64_t after) const {
  std::lock_guard lock(mutex_);
  std::vector<gossip::View> out;
  for (const auto& v : committed_)
    if (v.generation > after) out.push_back(v);
  return out;
}

bool Membership::wait_committed_after(std::uint64_t generation, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mutex_);
  return committed_cv_.wait_until(lock, deadline, [&] { return committed_.back().generation > generation; });
}

bool Membership::lost_after(int rank, std::uint64_t generation) const {
  std::lock_guard lock(mutex_);
  for (const auto& v : committed_)
    if (v.generation > generation && !v.contains(rank)) return true;
  return false;
}

void Membership::suspect(int rank, bool silent, const std::string& reason) {
  if (!silent) {
    std::lock_guard lock(mutex_);
    if (!reported_links_.insert(rank).second) return;  // once per rank
  }
  const auto evidence = silent ? fabric::Group::Evidence::kSilent : fabric::Group::Evidence::kTransportError;
  const auto verdict = group_.suspect(rank, evidence, reason);
  if (verdict == fabric::Group::SuspectVerdict::kAlive) {
    peer_log().info("rank {} ({}) is slow but alive (heartbeats): {}; still waiting", rank, group_.peers()[rank].host,
                    reason);
  } else if (verdict == fabric::Group::SuspectVerdict::kUnreachable) {
    peer_log().warn("could not report rank {} ({}) to the membership service: {}", rank, group_.peers()[rank].host,
                    reason);
  }
}

void Membership::on_adopted(std::function<void(const ViewEvent&)> listener) {
  std::lock_guard lock(mutex_);
  listener_ = std::move(listener);
}

std::vector<ViewEvent> Membership::history() const {
  std::lock_guard lock(mutex_);
  return history_;
}

}  // namespace murmur::peer
