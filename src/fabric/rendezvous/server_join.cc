// The server's side of joining a running job: a joining Hello gets a new
// member id (max id ever seen + 1) and the current view as a pending joiner;
// its admit request makes the next view, with it added and listed as joined,
// pushed to every member in the same sequence as losses. A joiner whose job
// signature differs from the job's is refused, and the members are told.
#include <map>
#include <string>
#include <vector>

#include "common/log.h"
#include "fabric/rendezvous/server_impl.h"

namespace murmur::fabric::rendezvous {

namespace {

// "key=value;key=value" -> key -> value. Untrusted text: entries without '='
// count as a key with an empty value; nothing is interpreted.
std::map<std::string, std::string> signature_entries(const std::string& signature) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start <= signature.size()) {
    std::size_t end = signature.find(';', start);
    if (end == std::string::npos) end = signature.size();
    const std::string entry = signature.substr(start, end - start);
    if (!entry.empty()) {
      const auto eq = entry.find('=');
      out[entry.substr(0, eq)] = eq == std::string::npos ? "" : entry.substr(eq + 1);
    }
    start = end + 1;
  }
  return out;
}

// "" when the signatures agree, else one "job has k=v, joiner has k=w" per
// differing key, joined with "; ".
std::string signature_difference(const std::string& job, const std::string& joiner) {
  const auto a = signature_entries(job);
  const auto b = signature_entries(joiner);
  std::string out;
  const auto add = [&](const std::string& key) {
    const auto in_a = a.find(key);
    const auto in_b = b.find(key);
    const std::string job_has = in_a == a.end() ? "no " + key : key + "=" + in_a->second;
    const std::string joiner_has = in_b == b.end() ? "no " + key : key + "=" + in_b->second;
    out += (out.empty() ? "" : "; ") + ("job has " + job_has + ", joiner has " + joiner_has);
  };
  for (const auto& [key, value] : a) {
    if (auto it = b.find(key); it == b.end() || it->second != value) add(key);
  }
  for (const auto& [key, value] : b) {
    if (a.count(key) == 0) add(key);
  }
  return out;
}

}  // namespace

bool Server::Impl::handle_join(const SessionPtr& s, const wire::Hello& hello) {
  if (hello.rank != -1 || hello.rejoin) {
    refuse(s, "a joining Hello must have rank -1 and no rejoin view (it had rank " + std::to_string(hello.rank) + ")");
    return false;
  }
  if (!view_started_) {
    refuse(s, "no job is running to join yet (the first view has not started)");
    return false;
  }
  if (auto diff = signature_difference(job_signature_, hello.signature); !diff.empty()) {
    const std::string reason = "job signature differs: " + diff;
    // The members' logs say it too: whoever looks at the job sees why nobody joined.
    for (const auto& [rank, m] : members_) send(m, wire::JoinRefused{hello.host, reason});
    refuse(s, reason);
    return false;
  }
  if (next_id_ >= kMaxMemberId) {
    refuse(s, "no member ids left (" + std::to_string(kMaxMemberId) + " used)");
    return false;
  }
  s->joined = true;
  s->pending_join = true;
  s->rank = next_id_++;
  s->host = hello.host;
  pending_joiners_[s->rank] = s;
  s->watchdog.cancel();  // re-arm with the heartbeat timeout
  send(s, wire::Welcome{true, "", s->rank, world_size_});
  push_view(s, {});  // what it will join; it is not in it yet
  rendezvous_log().info("rendezvous server: {} asks to join view {}; assigned id {}", s->who(), generation_, s->rank);
  return true;
}

bool Server::Impl::allowed_before_admission(const SessionPtr& s, const wire::Request& q) const {
  switch (q.op) {
    case wire::Op::get:
    case wire::Op::wait:
    case wire::Op::admit:
    case wire::Op::heartbeat:
    case wire::Op::leave:
      return true;
    case wire::Op::set: {
      // Only its own keys (its address, its standby): a joiner not admitted
      // yet must not change what members read about each other.
      const std::string own = "/" + std::to_string(s->rank);
      return q.key.size() > own.size() && q.key.compare(q.key.size() - own.size(), own.size(), own) == 0;
    }
    default:
      return false;
  }
}

// Order. Joiners are admitted in the order of their ids: members add them to
// their transports in the order the views come, and a transport treats every
// rank below the highest it knows as a member or as absent for good
// (transport.h, "Joining a running job"). So an admit waits while a joiner
// with a smaller id is pending (asked to join, not admitted, still
// connected); when that one is admitted or goes away, the next goes.
void Server::Impl::do_admit(const SessionPtr& s, const wire::Request& q) {
  waiting_admits_[s->rank] = q;
  admit_in_order();
}

void Server::Impl::admit_in_order() {
  // A view change that waits for a quorum goes first (publish_view_change
  // calls this again).
  if (!unconfirmed_losses_.empty()) return;
  while (!pending_joiners_.empty()) {
    const auto first = pending_joiners_.begin();
    const auto waiting = waiting_admits_.find(first->first);
    if (waiting == waiting_admits_.end()) return;  // the smallest id has not asked yet
    const SessionPtr s = first->second;
    const wire::Request q = waiting->second;
    pending_joiners_.erase(first);
    waiting_admits_.erase(waiting);
    admit_now(s, q);
  }
}

void Server::Impl::admit_now(const SessionPtr& s, const wire::Request& q) {
  if (!view_started_) {
    // The job ended while it waited (every member left): nothing to join.
    send(s, error_response(q.id, "the job ended before rank " + std::to_string(s->rank) + " was admitted"));
    return;
  }
  s->pending_join = false;
  s->member = true;
  members_[s->rank] = s;
  member_count_ = members_.size();
  view_[s->rank] = s->host;
  ++generation_;
  published_generation_ = static_cast<std::int64_t>(generation_);
  rendezvous_log().info("rendezvous server: admitted {} in view {} ({} members)", s->who(), generation_, view_.size());
  // The same sequence as losses: one io thread sends every view to every
  // member, the joiner included, before the admit is answered.
  const std::vector<int> joined{s->rank};
  for (const auto& [rank, m] : members_) push_view(m, {}, joined);
  wire::Response ok;
  ok.id = q.id;
  send(s, ok);
}

}  // namespace murmur::fabric::rendezvous
