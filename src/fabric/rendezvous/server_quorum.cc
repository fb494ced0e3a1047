// Quorum for the server's view changes: losses wait until a quorum of the
// view they were lost from is heard from, and a server that cannot hear one
// stands down (server.h, "Quorum"); the end of a failover's grace asks the
// same question of the members that rejoined.
//
// Why hearing from members after the loss, and not counting who is still
// connected: a partition closes no connection. The members on the far side
// go silent within one heartbeat interval of each other, so a server that
// declares them one by one would at each step still see most of the last
// view connected, and shrink to the near side without ever seeing a
// minority. Only messages that arrive after the loss prove a member is on
// this side of it.
#include <algorithm>
#include <string>
#include <vector>

#include "common/log.h"
#include "fabric/rendezvous/server_impl.h"

namespace murmur::fabric::rendezvous {

namespace {

// More than half of `base`, or exactly half with its lowest rank: at most
// one side of any split of `base` passes.
template <class HeardFrom>
bool is_quorum(const std::map<int, std::string>& base, HeardFrom heard_from) {
  std::size_t heard = 0;
  for (const auto& [rank, host] : base) heard += heard_from(rank) ? 1 : 0;
  const bool lowest_heard = !base.empty() && heard_from(base.begin()->first);
  return 2 * heard > base.size() || (2 * heard == base.size() && lowest_heard);
}

// "rank 3 (node7) was lost: <reason>; rank 5 (node9) left": why barriers fail.
std::string describe_losses(const std::vector<MemberLost>& lost) {
  std::string why;
  for (const auto& l : lost) {
    why += (why.empty() ? "" : "; ") + ("rank " + std::to_string(l.rank) + " (" + l.host + ") ") +
           (l.left_cleanly ? "left" : "was lost: " + l.reason);
  }
  return why;
}

}  // namespace

const std::map<int, std::string>& Server::Impl::loss_base() const {
  return unconfirmed_losses_.empty() ? view_ : quorum_base_;
}

bool Server::Impl::rejoined_a_quorum() const {
  return is_quorum(loss_base(), [&](int rank) { return members_.count(rank) != 0; });
}

void Server::Impl::on_grace_expired() {
  in_grace_ = false;
  if (!rejoined_a_quorum()) {
    stand_down("only " + std::to_string(members_.size()) + " of the " + std::to_string(loss_base().size()) +
               " members of view " + std::to_string(generation_) + " reached this standby within the failover grace (" +
               ms_text(options_.failover_grace) +
               ") after the rendezvous server was lost: a partition or a mass failure, and this is the smaller "
               "side, which stops so that the job does not split in two");
    return;
  }
  std::vector<MemberLost> lost;
  for (const auto& [rank, host] : view_) {
    if (members_.count(rank) == 0) {
      lost.push_back(MemberLost{rank, host,
                                "did not rejoin within the failover grace (" + ms_text(options_.failover_grace) +
                                    ") after the rendezvous server was lost",
                                false});
    }
  }
  if (lost.empty() && unconfirmed_losses_.empty()) return;
  for (const auto& m : lost)
    rendezvous_log().warn("rendezvous server: lost rank {} ({}): {}", m.rank, m.host, m.reason);
  // The rejoined members are a quorum: this publishes them, and any loss
  // that waited for one, at once.
  publish_view_change(std::move(lost));
}

void Server::Impl::change_view(const std::vector<MemberLost>& lost) {
  const bool any_lost = std::any_of(lost.begin(), lost.end(), [](const MemberLost& m) { return !m.left_cleanly; });
  if (unconfirmed_losses_.empty() && !(any_lost && options_.require_quorum && view_started_)) {
    publish_view_change(lost);
    return;
  }
  if (unconfirmed_losses_.empty()) {
    quorum_base_ = view_;
    losses_since_ = Session::Clock::now();
    // Twice the staleness that declares a member: a live one heartbeats
    // several times in it even on a loaded host, and a stand-down ends the
    // job for everyone here, so it must not come from a late heartbeat.
    quorum_timer_ =
        arm(static_cast<std::uint64_t>(2 * options_.heartbeat_stale.count()), [this] { on_quorum_deadline(); });
  }
  for (const auto& m : lost) {
    view_.erase(m.rank);
    if (m.left_cleanly) quorum_base_.erase(m.rank);  // it goes on nowhere: no side to count it on
    unconfirmed_losses_.push_back(m);
  }
  // Nothing completes among the members left while the loss waits: a
  // barrier of the near side of a partition is not one of the job.
  fail_barriers(describe_losses(lost));
  confirm_losses();
}

void Server::Impl::publish_view_change(std::vector<MemberLost> lost) {
  if (quorum_timer_) quorum_timer_->cancel();
  quorum_timer_.reset();
  quorum_base_.clear();
  lost.insert(lost.begin(), unconfirmed_losses_.begin(), unconfirmed_losses_.end());
  unconfirmed_losses_.clear();
  for (const auto& m : lost) view_.erase(m.rank);
  if (view_started_) {
    ++generation_;
    published_generation_ = static_cast<std::int64_t>(generation_);
  }
  // MemberLost first (what clients before views relied on), then the view:
  // one io thread sends both, so every member sees the same order.
  for (const auto& [rank, m] : members_) {
    for (const auto& l : lost) send(m, l);
    if (view_started_) push_view(m, lost);
  }
  // No barrier can complete without them any more.
  fail_barriers(describe_losses(lost));
  if (members_.empty() && (view_.empty() || !view_started_)) {
    end_job();
    return;
  }
  // Joiners that asked while the loss waited go now.
  boost::asio::post(io_, [this] { admit_in_order(); });
}

void Server::Impl::on_heard() {
  if (!unconfirmed_losses_.empty()) confirm_losses();
}

bool Server::Impl::confirm_losses() {
  if (unconfirmed_losses_.empty()) return false;
  const bool heard = is_quorum(quorum_base_, [&](int rank) {
    const auto it = members_.find(rank);
    return it != members_.end() && it->second->last_seen > losses_since_;
  });
  if (!heard) return false;
  publish_view_change({});
  return true;
}

bool Server::Impl::withdraw_unconfirmed_loss(int rank, const std::string& host, std::uint64_t generation) {
  // Only a loss nobody was told of: its view is still the current one. A
  // connection that closed (a client's heartbeat time-out on a loaded host
  // closes it and reconnects) is not a partition, and the rejoin proves the
  // member is on this side; without this a failover standby whose members
  // reconnect during the grace counted none of them and stood down.
  if (generation != generation_) return false;
  const auto it = std::find_if(unconfirmed_losses_.begin(), unconfirmed_losses_.end(),
                               [&](const MemberLost& m) { return m.rank == rank && !m.left_cleanly; });
  if (it == unconfirmed_losses_.end()) return false;
  unconfirmed_losses_.erase(it);
  view_[rank] = host;
  rendezvous_log().info("rendezvous server: rank {} ({}) is back before its loss was confirmed; the loss is withdrawn",
                        rank, host);
  if (unconfirmed_losses_.empty()) {
    if (quorum_timer_) quorum_timer_->cancel();
    quorum_timer_.reset();
    quorum_base_.clear();
  }
  return true;
}

void Server::Impl::on_quorum_deadline() {
  if (unconfirmed_losses_.empty() || confirm_losses()) return;
  // After a failover, the members still rejoining cannot have been heard
  // yet: the grace's end decides (on_grace_expired).
  if (in_grace_) return;
  std::size_t heard = 0;
  for (const auto& [rank, s] : members_) heard += s->last_seen > losses_since_ ? 1 : 0;
  std::string lost;
  for (const auto& m : unconfirmed_losses_) {
    if (!m.left_cleanly) lost += (lost.empty() ? "" : ", ") + std::to_string(m.rank) + " (" + m.host + ")";
  }
  stand_down("after losing rank " + lost + ", it heard from only " + std::to_string(heard) + " of the " +
             std::to_string(quorum_base_.size()) + " members of view " + std::to_string(generation_) + " within " +
             ms_text(2 * options_.heartbeat_stale) +
             ": a partition or a mass failure, and this is the smaller side, which stops so that the job does not "
             "split in two");
}

void Server::Impl::stand_down(const std::string& why) {
  stood_down_ = why;
  rendezvous_log().error("rendezvous server: standing down: {}", why);
  if (quorum_timer_) quorum_timer_->cancel();
  quorum_timer_.reset();
  // The losses that waited are told with their own reasons; every member
  // held here, heard or silent, is out with this one.
  std::vector<MemberLost> out = std::move(unconfirmed_losses_);
  unconfirmed_losses_.clear();
  quorum_base_.clear();
  for (const auto& [rank, s] : members_) out.push_back(MemberLost{rank, s->host, why, false});
  for (const auto& m : out) view_.erase(m.rank);
  fail_barriers("this rendezvous server stood down: " + why);
  for (const auto& [rank, q] : waiting_admits_) {
    if (const auto joiner = pending_joiners_.find(rank); joiner != pending_joiners_.end()) {
      send(joiner->second, error_response(q.id, "this rendezvous server stood down: " + why));
    }
  }
  waiting_admits_.clear();
  if (view_started_) {
    ++generation_;
    published_generation_ = static_cast<std::int64_t>(generation_);
  }
  // Each member is told it is out, in a view without any of them, then its
  // connection closes: its peer exits naming why (or rejoins as a new
  // member, which this server now refuses).
  const auto held = std::move(members_);
  members_.clear();
  member_count_ = 0;
  for (const auto& [rank, s] : held) {
    s->member = false;
    drop_requests_of(s);
    for (const auto& l : out) send(s, l);
    if (view_started_) push_view(s, out);
    s->gone = true;
    s->conn->close_after_flush();
    s->watchdog.cancel();
  }
  // The job is over here; one server may host the next (end_job keeps
  // stood_down_, which refuses this job's members until then).
  end_job();
}

}  // namespace murmur::fabric::rendezvous
