// Joining a running job (Group::join_running) and the members' side of it:
// the view thread, which adds each admitted joiner to the transport and
// tells it so before the on_view callback sees the view.
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "common/background_thread.h"
#include "common/host.h"
#include "common/log.h"
#include "common/trace.h"
#include "fabric/errors.h"
#include "fabric/group.h"
#include "fabric/group_internal.h"
#include "fabric/per_link_transport.h"

namespace murmur::fabric {

namespace group_detail {

std::unique_ptr<rendezvous::Client> connect_relayed_control(const std::shared_ptr<Group::FailureRelay>& relay,
                                                            const GroupOptions& options, const std::string& self_host,
                                                            bool join) {
  std::weak_ptr<Group::FailureRelay> weak = relay;
  return connect_control(
      options, self_host,
      [weak](const rendezvous::MemberLost& lost) {
        if (auto r = weak.lock()) r->member_lost(lost);
      },
      [weak](const rendezvous::View& view, const std::vector<rendezvous::MemberLost>& lost) {
        if (auto r = weak.lock()) r->view_changed(view, lost);
      },
      join);
}

}  // namespace group_detail

using namespace group_detail;

namespace {

bool in_view(const rendezvous::View& view, int rank) {
  return std::any_of(view.members.begin(), view.members.end(), [&](const auto& m) { return m.rank == rank; });
}

// Waits until every member of `admitting` (but the joiner) has add_peer'd it.
// A member lost meanwhile never will: skipped once the view lacks it.
void wait_until_admitted(rendezvous::Client& control, const rendezvous::View& admitting, int joiner,
                         std::chrono::milliseconds timeout) {
  for (const auto& m : admitting.members) {
    if (m.rank == joiner) continue;
    try {
      control.wait(admitted_key(joiner, m.rank), timeout);
    } catch (const FabricError& e) {
      if (!in_view(control.view(), m.rank)) continue;
      throw PeerError(m.rank, m.host,
                      "did not add joiner " + std::to_string(joiner) + " to its transport: " + e.what());
    }
  }
}

// The provider the job's members run, as far as the joiner's own setting
// allows: members that run a per-link transport (per_link_transport.h)
// can only be reached by another, whatever the joiner's "auto" would pick
// on its own, and members that do not, only by a plain one. Read from the
// first member's published address.
std::string job_provider(rendezvous::Client& control, const rendezvous::View& before, int joiner,
                         const GroupOptions& options) {
  const std::string& asked = options.transport.provider;
  if (options.transport.backend != "libfabric" || asked != "auto") return asked;
  for (const auto& m : before.members) {
    if (m.rank < 0 || m.rank >= joiner) continue;
    const auto names = per_link_inner_names(read_address(control, m.rank, m.host, options.join_timeout));
    if (!names) return asked;
    const auto colon = names->second.find(':');
    return "shm+" + names->second.substr(colon == std::string::npos ? 0 : colon + 1);
  }
  return asked;
}

// Where the members of `before` run, seen from the joiner. A job whose
// members run plain transports gets no per-link one from a joiner's "auto"
// (machines_shared cleared), since the members could not reach it.
Locality joiner_locality(rendezvous::Client& control, const rendezvous::View& before, int joiner,
                         const std::string& machine, const std::string& self_host, const GroupOptions& options) {
  std::vector<std::string> machines, hosts;
  for (const auto& m : before.members) {
    if (m.rank < 0 || m.rank >= joiner) continue;  // untrusted
    machines.push_back(control.get(kMachineKeyPrefix + std::to_string(m.rank)).value_or(""));
    hosts.push_back(m.host);
  }
  machines.push_back(machine);
  hosts.push_back(self_host);
  Locality here = locality_of(machines, hosts, static_cast<int>(machines.size()) - 1);
  if (options.transport.provider == "auto") here.machines_shared = false;  // job_provider found no per-link member
  return here;
}

}  // namespace

std::unique_ptr<Group> Group::join_running(const GroupOptions& options) {
  std::unique_ptr<Group> group(new Group());
  group->relay_ = std::make_shared<FailureRelay>();
  const std::string self_host = self_host_of(options);
  if (options.standby) group->standby_ = start_standby(options);
  group->control_ = connect_relayed_control(group->relay_, options, self_host, /*join=*/true);
  rendezvous::Client& control = *group->control_;
  const int id = control.rank();
  group->rank_ = id;
  group->size_ = id + 1;
  fabric_log().info("joining the running job as member id {}", id);

  // Admitted before the first members connected, it would stall their
  // "murmur/connected" barrier, which would count it.
  control.wait(kJobRunningKey, options.join_timeout);
  GroupOptions own = options;
  own.rank = id;
  own.size = id + 1;
  const auto before = control.view();
  own.transport.provider = job_provider(control, before, id, options);
  const std::string machine = machine_of(own);
  control.set(kMachineKeyPrefix + std::to_string(id), machine);
  auto transport = open_and_publish(control, own, joiner_locality(control, before, id, machine, self_host, own));
  if (group->standby_) {
    const std::string host = standby_host(options, control, self_host);
    control.set(kStandbyKeyPrefix + std::to_string(id), host + ":" + std::to_string(group->standby_->port()));
  }
  control.admit(options.join_timeout);
  // The admitting view was pushed (and queued) before the admit was
  // answered; the client's current view may be a later one already.
  const rendezvous::View admitting = group->relay_->queued_admitting(id).value_or(control.view());

  std::vector<PeerInfo> peers(id + 1, PeerInfo{-1, "", ""});
  std::vector<std::pair<int, rendezvous::Endpoint>> standbys;
  for (const auto& m : admitting.members) {
    if (m.rank < 0 || m.rank > id) continue;  // untrusted; a later joiner is added by the view thread
    peers[m.rank] =
        PeerInfo{m.rank, m.host,
                 m.rank == id ? transport->address() : read_address(control, m.rank, m.host, options.join_timeout)};
    if (!group->standby_) continue;
    if (auto value = control.get(kStandbyKeyPrefix + std::to_string(m.rank))) {
      if (auto where = parse_standby(m.rank, *value)) standbys.push_back({m.rank, *where});
    }
  }
  if (group->standby_) {
    control.set_standbys(standbys);
    std::lock_guard<std::mutex> lock(group->relay_->mutex);
    group->relay_->standbys = standbys;
  }
  group->attach(std::move(transport), peers, admitting);
  group->transport_->connect(peers);
  wait_until_admitted(control, admitting, id, options.join_timeout);
  group->start_view_thread(own);
  fabric_log().info("member id {} joined the running job in view {} over {}", id, admitting.generation,
                    group->transport_->name());
  return group;
}

void Group::start_view_thread(const GroupOptions& options) {
  const auto timeout = options.join_timeout;
  view_thread_ = start_background_thread([this, timeout] {
    trace::name_thread("group views");
    run_views(timeout);
  });
}

void Group::stop_view_thread() {
  if (!view_thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(relay_->mutex);
    relay_->stopping = true;
  }
  relay_->pending_cv.notify_all();
  view_thread_.join();
}

void Group::run_views(std::chrono::milliseconds timeout) {
  for (;;) {
    FailureRelay::Pending next;
    {
      std::unique_lock<std::mutex> lock(relay_->mutex);
      relay_->pending_cv.wait(lock, [this] { return relay_->stopping || !relay_->pending.empty(); });
      if (relay_->stopping) return;
      next = std::move(relay_->pending.front());
      relay_->pending.pop_front();
    }
    for (int joiner : next.view.joined) {
      const auto it = std::find_if(next.view.members.begin(), next.view.members.end(),
                                   [&](const auto& m) { return m.rank == joiner; });
      if (joiner == rank_ || it == next.view.members.end()) continue;
      add_joiner(joiner, it->host, timeout);
    }
    std::function<void(const MembershipView&, const std::vector<LostPeer>&)> callback;
    MembershipView copy;
    {
      std::lock_guard<std::mutex> lock(relay_->mutex);
      // Views queued while joining may be older than the one join() read.
      if (next.view.generation < relay_->view.generation) continue;
      relay_->view = relay_->to_view_locked(next.view);
      copy = relay_->view;
      callback = relay_->on_view;
      relay_->on_view_running = static_cast<bool>(callback);
    }
    fabric_log().info("membership view {}: {} members, {} lost, {} joined", copy.generation, copy.members.size(),
                      next.lost.size(), copy.joined.size());
    if (!callback) continue;
    callback(copy, next.lost);
    {
      std::lock_guard<std::mutex> lock(relay_->mutex);
      relay_->on_view_running = false;
    }
    relay_->on_view_idle.notify_all();
  }
}

void Group::add_joiner(int joiner, const std::string& host, std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(relay_->mutex);
    // Known already (a view replayed after a failover), or lost before it
    // could be added: nothing to connect.
    if (joiner < static_cast<int>(relay_->addresses.size()) || relay_->gone.count(joiner) != 0) return;
  }
  PeerInfo info{joiner, host, ""};
  try {
    info.address = read_address(*control_, joiner, host, timeout);
    transport_->add_peer(info);
  } catch (const std::exception& e) {
    // Its id stays unknown to this transport; the joiner will not hear from
    // this member and fails its join_running on the admitted key.
    fabric_log().error("could not add joiner rank {} ({}): {}", joiner, host, e.what());
    return;
  }
  std::vector<std::pair<int, rendezvous::Endpoint>> standbys;
  {
    std::lock_guard<std::mutex> lock(relay_->mutex);
    relay_->addresses.resize(joiner + 1, PeerInfo{-1, "", ""});
    relay_->addresses[joiner] = info;
    if (relay_->gone.count(joiner) != 0) {
      transport_->fail_peer(joiner, std::make_exception_ptr(PeerError(joiner, host, "lost while being added")));
    }
    standbys = relay_->standbys;
  }
  try {
    if (standby_) {
      if (auto value = control_->get(kStandbyKeyPrefix + std::to_string(joiner))) {
        if (auto where = parse_standby(joiner, *value)) {
          standbys.push_back({joiner, *where});
          control_->set_standbys(standbys);
          std::lock_guard<std::mutex> lock(relay_->mutex);
          relay_->standbys = standbys;
        }
      }
    }
    control_->set(admitted_key(joiner, rank_), "1");
    fabric_log().info("added joiner rank {} ({})", joiner, host);
  } catch (const std::exception& e) {
    fabric_log().error("could not tell joiner rank {} ({}) it was added: {}", joiner, host, e.what());
  }
}

}  // namespace murmur::fabric
