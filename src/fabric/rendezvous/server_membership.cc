// The server's membership: Hello, the view and its generations, losses,
// suspicion, and adopting the view of members that fail over to this server.
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "common/job_token.h"
#include "common/log.h"
#include "fabric/rendezvous/hello_proof.h"
#include "fabric/rendezvous/server_impl.h"

namespace murmur::fabric::rendezvous {

namespace {

// Compares without an early exit, so response time does not leak how much of
// the token matched.
bool same_token(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

bool Server::Impl::handle(const SessionPtr& s, const wire::Hello& hello) {
  if (s->joined) {
    reject(s, "second Hello on one connection");
    return false;
  }
  const auto refuse_with = [&](const std::string& reason) {
    refuse(s, reason);
    return false;
  };
  if (hello.version != wire::kProtocolVersion) {
    return refuse_with("protocol version " + std::to_string(hello.version) + " differs from the server's " +
                       std::to_string(wire::kProtocolVersion));
  }
  if (!same_token(hello.token, options_.token)) return refuse_with("cluster token mismatch");
  if (!options_.job_token.empty()) {
    if (s->challenge.empty()) {
      // The first Hello only earns a Challenge; nothing in it is acted on.
      s->challenge = std::string(job_token::bytes_of(job_token::make_nonce()));
      // Our proof over the client's nonce (none from a client without a
      // token, which will give up on the Challenge anyway). The client
      // chose that nonce, so anyone may have us sign one: that lets a
      // process relay to us (a proxy it could be anyway), never forge a
      // client's proof, whose context differs.
      wire::Challenge challenge{s->challenge, ""};
      if (hello.nonce.size() == sizeof(job_token::Nonce)) {
        challenge.proof = hello_proof(Prover::kServer, options_.job_token, hello.nonce);
      }
      send(s, challenge);
      return true;
    }
    if (!hello_proof_matches(Prover::kClient, options_.job_token, s->challenge, hello.proof)) {
      return refuse_with("job token proof does not match: this process's " +
                         std::string(job_token::kEnvironmentVariable) + " is not the job's");
    }
  }
  if (!stood_down_.empty()) {
    // Members of the job it stood down for (coming back, or joining it)
    // are refused with why; a fresh Hello starts the next job here.
    if (hello.rejoin || hello.join) return refuse_with("this rendezvous server stood down: " + stood_down_);
    stood_down_.clear();
  }
  if (hello.join) return handle_join(s, hello);
  // A rejoin (failover) may come from a member admitted as a joiner, whose
  // id is at or above the original world size.
  const bool id_in_range = hello.rank >= 0 && (hello.rank < hello.size || (hello.rejoin && hello.rank < kMaxMemberId));
  // The world size bounds what the server walks per rank (a barrier's
  // time-out lists the missing ranks): a Hello with a size in the hundreds
  // of millions made it build a string of gigabytes
  // (tests/fuzz/rendezvous_server).
  if (hello.size > kMaxMemberId) {
    return refuse_with("world size " + std::to_string(hello.size) + " is above the limit of " +
                       std::to_string(kMaxMemberId));
  }
  if (hello.size <= 0 || !id_in_range) {
    return refuse_with("rank " + std::to_string(hello.rank) + " out of range for world size " +
                       std::to_string(hello.size));
  }
  if (world_size_ != 0 && hello.size != world_size_) {
    return refuse_with("world size " + std::to_string(hello.size) + " differs from " + std::to_string(world_size_));
  }
  if (hello.rejoin) {
    if (auto why = malformed_rejoin(hello); !why.empty()) return refuse_with(why);
  }
  if (auto it = members_.find(hello.rank); it != members_.end()) {
    return refuse_with("rank " + std::to_string(hello.rank) + " already joined from host " + it->second->host);
  }
  admit(s, hello);
  return true;
}

std::string Server::Impl::malformed_rejoin(const wire::Hello& hello) const {
  // Untrusted: a view must name ranks of this world, ascending, without repeats.
  int previous = -1;
  for (const auto& m : hello.members) {
    if (m.rank <= previous || m.rank >= kMaxMemberId) {
      return "rejoining Hello's view " + std::to_string(hello.generation) + " lists rank " + std::to_string(m.rank) +
             " out of order or out of range (ids below " + std::to_string(kMaxMemberId) + ")";
    }
    previous = m.rank;
  }
  return "";
}

void Server::Impl::admit(const SessionPtr& s, const wire::Hello& hello) {
  s->joined = true;
  s->rank = hello.rank;
  s->host = hello.host;
  world_size_ = hello.size;
  note_id(std::max(hello.rank, hello.size - 1));
  for (const auto& m : hello.members) note_id(m.rank);
  if (job_signature_.empty()) job_signature_ = hello.signature;
  s->watchdog.cancel();  // re-arm with the heartbeat timeout
  if (hello.rejoin) {
    adopt(hello);
    withdraw_unconfirmed_loss(s->rank, s->host, hello.generation);
  }
  bool grew = false;
  if (view_started_ && view_.count(s->rank) == 0 && !hello.rejoin) {
    // A fresh Hello from a rank the view lost: it joins again, as before views.
    view_[s->rank] = s->host;
    grew = true;
  }
  // A rejoin from a rank the view no longer holds is admitted only to be
  // told so: it can hear the view and ask, but not act on the job.
  s->member = !view_started_ || view_.count(s->rank) != 0;
  if (s->member) {
    members_[s->rank] = s;
    member_count_ = members_.size();
    if (view_started_) view_[s->rank] = s->host;
  }
  send(s, wire::Welcome{true, "", s->rank, world_size_});
  rendezvous_log().info("rendezvous server: rank {} {} from {} ({} of {}){}", s->rank,
                        hello.rejoin ? "rejoined" : "joined", s->who(), members_.size(), world_size_,
                        s->member ? "" : "; not a member of the current view");
  if (!view_started_ && static_cast<int>(members_.size()) == world_size_) {
    view_started_ = true;
    generation_ = 0;
    for (const auto& [rank, m] : members_) view_[rank] = m->host;
    published_generation_ = 0;
    for (const auto& [rank, m] : members_) push_view(m, {});
  } else if (grew) {
    ++generation_;
    published_generation_ = static_cast<std::int64_t>(generation_);
    for (const auto& [rank, m] : members_) push_view(m, {});
  } else if (view_started_) {
    push_view(s, {});  // a rejoining member learns the view this server holds
  }
}

void Server::Impl::adopt(const wire::Hello& hello) {
  if (!grace_timer_) {
    in_grace_ = true;
    grace_timer_ = arm(static_cast<std::uint64_t>(options_.failover_grace.count()), [this] { on_grace_expired(); });
  }
  if (view_started_ && hello.generation <= generation_) return;
  rendezvous_log().info("rendezvous server: adopting view {} ({} members) from rank {}'s rejoin", hello.generation,
                        hello.members.size(), hello.rank);
  view_started_ = true;
  generation_ = hello.generation;
  published_generation_ = static_cast<std::int64_t>(generation_);
  view_.clear();
  for (const auto& m : hello.members) view_[m.rank] = m.host;
  // Rejoined members the newer view no longer holds were expelled by a
  // server this one never heard from: they learn it and are dropped.
  for (auto it = members_.begin(); it != members_.end();) {
    if (view_.count(it->first) != 0) {
      push_view(it->second, {});
      ++it;
      continue;
    }
    const SessionPtr expelled = it->second;
    it = members_.erase(it);
    expelled->member = false;
    drop_requests_of(expelled);
    push_view(expelled, {});
  }
  member_count_ = members_.size();
}

void Server::Impl::lose(const SessionPtr& s, const std::string& reason, bool left_cleanly, bool tell_it) {
  if (!s->joined || s->gone) return;
  if (s->pending_join) {
    // A joiner that goes away before it is admitted: the next may go.
    pending_joiners_.erase(s->rank);
    waiting_admits_.erase(s->rank);
    boost::asio::post(io_, [this] { admit_in_order(); });
  }
  s->gone = true;
  const bool was_member = s->member;
  s->member = false;
  if (auto it = members_.find(s->rank); it != members_.end() && it->second == s) members_.erase(it);
  member_count_ = members_.size();
  if (left_cleanly) {
    rendezvous_log().info("rendezvous server: {} left", s->who());
  } else {
    rendezvous_log().warn("rendezvous server: lost {}: {}", s->who(), reason);
  }
  drop_requests_of(s);
  const std::vector<MemberLost> lost{MemberLost{s->rank, s->host, reason, left_cleanly}};
  if (was_member) change_view(lost);
  if (tell_it && view_started_) {
    // Its loss may wait for a quorum: it is told the generation that will
    // publish it, which it has not seen (an older one it would ignore).
    auto told = current_view(lost);
    if (!unconfirmed_losses_.empty()) told.view.generation = generation_ + 1;
    send(s, told);
  }
  if (left_cleanly || tell_it) {
    s->conn->close_after_flush();
  } else {
    s->conn->close();
  }
  s->watchdog.cancel();
}

void Server::Impl::drop_requests_of(const SessionPtr& s) {
  // Its own waits die with it.
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    std::erase_if(it->second, [&](const Pending& p) {
      if (p.session != s) return false;
      p.timer->cancel();
      return true;
    });
    it = it->second.empty() ? waiters_.erase(it) : std::next(it);
  }
  for (auto it = gathers_.begin(); it != gathers_.end();) {
    std::erase_if(it->second, [&](const Gathering& g) {
      if (g.pending.session != s) return false;
      g.pending.timer->cancel();
      return true;
    });
    it = it->second.empty() ? gathers_.erase(it) : std::next(it);
  }
}

void Server::Impl::push_view(const SessionPtr& s, const std::vector<MemberLost>& lost, const std::vector<int>& joined) {
  send(s, current_view(lost, joined));
}

wire::ViewChanged Server::Impl::current_view(const std::vector<MemberLost>& lost,
                                             const std::vector<int>& joined) const {
  wire::ViewChanged v;
  v.view.generation = generation_;
  for (const auto& [rank, host] : view_) v.view.members.push_back(Member{rank, host});
  v.view.joined = joined;
  v.lost = lost;
  return v;
}

void Server::Impl::fail_barriers(const std::string& why) {
  for (auto& [name, arrived] : barriers_) {
    for (auto& [rank, p] : arrived) {
      p.timer->cancel();
      if (!p.session->gone) send(p.session, error_response(p.id, "barrier '" + name + "' failed: " + why));
    }
  }
  barriers_.clear();
}

std::size_t Server::Impl::barrier_quorum() const {
  if (!view_started_) return static_cast<std::size_t>(world_size_);
  // Members whose loss waits for a quorum still count: a barrier of the
  // near side of a partition must not complete as the job's.
  std::size_t waiting = 0;
  for (const auto& m : unconfirmed_losses_) waiting += m.left_cleanly ? 0 : 1;
  return view_.size() + waiting;
}

void Server::Impl::end_job() {
  // The job is over: its keys go with it, so that the next job on this
  // server does not read the last one's addresses. Joiners waiting for
  // their admit hear it now, not at their join timeout.
  for (const auto& [rank, q] : waiting_admits_) {
    const auto joiner = pending_joiners_.find(rank);
    if (joiner == pending_joiners_.end()) continue;
    send(joiner->second, error_response(q.id, "the job ended before rank " + std::to_string(rank) + " was admitted"));
  }
  pending_joiners_.clear();
  waiting_admits_.clear();
  world_size_ = 0;
  store_.clear();
  store_bytes_ = 0;
  view_started_ = false;
  generation_ = 0;
  view_.clear();
  published_generation_ = -1;
  next_id_ = 0;
  job_signature_.clear();
  if (grace_timer_) grace_timer_->cancel();
  grace_timer_.reset();
  in_grace_ = false;
  if (quorum_timer_) quorum_timer_->cancel();
  quorum_timer_.reset();
  unconfirmed_losses_.clear();
  quorum_base_.clear();
}

void Server::Impl::do_suspect(const SessionPtr& s, const wire::Request& q) {
  wire::Response r;
  r.id = q.id;
  r.kind = wire::Response::Kind::verdict;
  const std::string by = "suspected by rank " + std::to_string(s->rank) + ": " + q.key;
  auto member = members_.find(q.rank);
  if (!s->member) {
    rendezvous_log().info("rendezvous server: ignoring suspicion of rank {} from {}, not a member of view {}", q.rank,
                          s->who(), generation_);
    r.verdict = SuspectVerdict::kNotMember;
  } else if (view_.count(q.rank) == 0) {
    r.verdict = SuspectVerdict::kAlreadyLost;  // published, or waiting for a quorum
  } else if (q.evidence == Evidence::kSilent &&
             (member == members_.end() ||
              Session::Clock::now() - member->second->last_seen < options_.heartbeat_stale)) {
    // Heartbeating, or not rejoined yet after a failover (the grace decides).
    r.verdict = SuspectVerdict::kAlive;
  } else {
    const std::string reason = q.evidence == Evidence::kSilent
                                   ? "no heartbeat for over " + ms_text(options_.heartbeat_stale) + "; " + by
                                   : "transport error; " + by;
    if (member != members_.end()) {
      const SessionPtr suspect = member->second;  // lose() erases the map entry
      lose(suspect, reason, false, /*tell_it=*/true);
    } else {
      rendezvous_log().warn("rendezvous server: lost rank {}: {}", q.rank, reason);
      change_view({MemberLost{q.rank, view_[q.rank], reason, false}});
    }
    r.verdict = SuspectVerdict::kDeclared;
  }
  send(s, r);
}

}  // namespace murmur::fabric::rendezvous
