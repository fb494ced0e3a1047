#include "fabric/group.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>

#include "common/host.h"
#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/server.h"
#include "fabric/shaper/shaped_transport.h"
#include "fabric/shaper/shaper_config.h"

namespace murmur::fabric {

// Forwards the rendezvous' MemberLost events to the transport. The client
// calls it on its io thread; the Group detaches it before the transport dies.
struct Group::FailureRelay {
  mutable std::mutex mutex;  // guards everything below; leaf lock
  std::condition_variable lost_cv;
  Transport* transport = nullptr;
  std::vector<LostPeer> lost;
  std::set<int> gone;               // ranks already passed to fail_peer
  std::vector<PeerInfo> addresses;  // by rank, once join() read them
  MembershipView view;
  std::function<void(const MembershipView&, const std::vector<LostPeer>&)> on_view;

  void member_lost(const rendezvous::MemberLost& lost) {
    std::unique_lock<std::mutex> lock(mutex);
    if (lost.rank < 0) {
      // The rendezvous itself is gone: nothing names a peer, so only log.
      fabric_log().error("control plane lost: {}", lost.reason);
      return;
    }
    fail_locked(lost);
  }

  // Called with mutex held; once per rank.
  void fail_locked(const rendezvous::MemberLost& lost) {
    if (!gone.insert(lost.rank).second) return;
    auto reason = lost.left_cleanly ? std::string("left the job") : lost.reason;
    if (!lost.left_cleanly) {
      fabric_log().warn("peer rank {} ({}) lost: {}", lost.rank, lost.host, reason);
      this->lost.push_back({lost.rank, lost.host, reason});
      lost_cv.notify_all();
    }
    if (transport != nullptr) {
      transport->fail_peer(lost.rank, std::make_exception_ptr(PeerError(lost.rank, lost.host, reason)));
    }
  }

  MembershipView to_view_locked(const rendezvous::View& v) const {
    MembershipView out;
    out.generation = v.generation;
    for (const auto& m : v.members) {
      PeerInfo p{m.rank, m.host, ""};
      if (m.rank >= 0 && m.rank < static_cast<int>(addresses.size())) p.address = addresses[m.rank].address;
      out.members.push_back(std::move(p));
    }
    return out;
  }

  void view_changed(const rendezvous::View& v, const std::vector<rendezvous::MemberLost>& lost_now) {
    std::function<void(const MembershipView&, const std::vector<LostPeer>&)> callback;
    MembershipView copy;
    std::vector<LostPeer> lost_list;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (const auto& l : lost_now) {
        fail_locked(l);
        lost_list.push_back({l.rank, l.host, l.left_cleanly ? std::string("left the job") : l.reason});
      }
      view = to_view_locked(v);
      copy = view;
      callback = on_view;
    }
    fabric_log().info("membership view {}: {} members, {} lost", copy.generation, copy.members.size(),
                      lost_list.size());
    if (callback) callback(copy, lost_list);
  }
};

namespace {
// An address key's value is one of these bytes followed by the address, or
// by the reason the rank could not open its transport.
constexpr char kAddressFollows = 'A';
constexpr char kOpenFailed = 'E';
const std::string kAddressKeyPrefix = "murmur/fabric-address/";

// The control-plane client of this rank, with `on_lost` called (on the
// client's io thread) for every member the rendezvous declares lost.
std::unique_ptr<rendezvous::Client> connect_control(
    const GroupOptions& options, const std::string& self_host,
    std::function<void(const rendezvous::MemberLost&)> on_lost,
    std::function<void(const rendezvous::View&, const std::vector<rendezvous::MemberLost>&)> on_view) {
  rendezvous::ClientOptions client_options;
  client_options.server_host = options.rendezvous_host;
  client_options.server_port = options.rendezvous_port;
  client_options.token = options.token;
  client_options.rank = options.rank;
  client_options.size = options.size;
  client_options.self_host = self_host;
  client_options.heartbeat_interval = options.heartbeat_interval;
  client_options.connect_timeout = options.join_timeout;
  client_options.heartbeat_stale = options.heartbeat_stale;
  auto control = std::make_unique<rendezvous::Client>(client_options);
  control->on_member_lost(std::move(on_lost));
  control->on_view(std::move(on_view));
  return control;
}

const std::string kStandbyKeyPrefix = "murmur/standby/";

// This member's idle standby rendezvous server, listening on an ephemeral port.
std::unique_ptr<rendezvous::Server> start_standby(const GroupOptions& options) {
  rendezvous::ServerOptions server_options;
  server_options.bind_host = options.standby_bind_host;
  server_options.token = options.token;
  const auto stale = options.heartbeat_stale.count() > 0 ? options.heartbeat_stale : options.heartbeat_interval * 3;
  server_options.heartbeat_stale = stale;
  server_options.heartbeat_timeout = std::max<std::chrono::milliseconds>(stale, std::chrono::milliseconds(5000));
  server_options.failover_grace = options.failover_grace;
  return std::make_unique<rendezvous::Server>(server_options);
}

// Publishes this member's standby and hands every member's to the client, so
// that it can fail over. Every rank publishes before anyone reads (gather).
void exchange_standbys(rendezvous::Client& control, const GroupOptions& options, const std::string& host,
                       std::uint16_t port) {
  control.set(kStandbyKeyPrefix + std::to_string(options.rank), host + ":" + std::to_string(port));
  const auto values = control.gather(kStandbyKeyPrefix, static_cast<std::uint32_t>(options.size), options.join_timeout);
  std::vector<std::pair<int, rendezvous::Endpoint>> standbys;
  for (int r = 0; r < options.size; ++r) {
    const std::string& v = values[r];
    const auto colon = v.rfind(':');
    int port_number = -1;
    if (colon != std::string::npos && colon + 1 < v.size() && v.size() - colon <= 6) {
      try {
        port_number = std::stoi(v.substr(colon + 1));
      } catch (const std::exception&) {
        port_number = -1;
      }
    }
    if (port_number <= 0 || port_number > 65535) {
      // Untrusted: a bad address only costs that rank's standby.
      fabric_log().warn("rank {} published a malformed standby address ({} bytes); not failing over to it", r,
                        v.size());
      continue;
    }
    standbys.push_back({r, rendezvous::Endpoint{v.substr(0, colon), static_cast<std::uint16_t>(port_number)}});
  }
  control.set_standbys(std::move(standbys));
}

// The host of every rank, as the members told the rendezvous.
std::vector<std::string> member_hosts(rendezvous::Client& control, int size) {
  std::vector<std::string> hosts(size);
  for (const auto& m : control.members()) {
    if (m.rank >= 0 && m.rank < size) hosts[m.rank] = m.host;
  }
  return hosts;
}

// This rank's transport, wrapped in the shaper when a link profile asks.
std::unique_ptr<Transport> open_transport(const GroupOptions& options, bool peers_on_this_host) {
  TransportOptions transport_options = options.transport;
  transport_options.rank = options.rank;
  transport_options.size = options.size;
  transport_options.peers_on_this_host = peers_on_this_host;
  auto transport = make_transport(transport_options);
  if (options.link_profile.empty()) return transport;
  auto config = options.link_profile.front() == '@' ? shaper::load_shaper_config(options.link_profile.substr(1))
                                                    : shaper::shaper_config_from_flag(options.link_profile);
  if (config.max_rank() >= options.size) {
    throw FabricError("link profile " + options.link_profile + " names rank " + std::to_string(config.max_rank()) +
                      " but the job has " + std::to_string(options.size) + " ranks");
  }
  if (config.is_identity()) return transport;
  // Seeded per rank so that jitter differs between links but repeats
  // between runs.
  return shaper::make_shaped_transport(std::move(transport), std::move(config),
                                       0x6d75726d00000000ULL ^ static_cast<std::uint64_t>(options.rank));
}

// Every rank's published address; PeerError naming a rank that could not
// open its transport, or published something else.
std::vector<PeerInfo> read_peers(rendezvous::Client& control, const GroupOptions& options,
                                 const std::vector<std::string>& hosts) {
  std::vector<PeerInfo> peers(options.size);
  for (int r = 0; r < options.size; ++r) {
    peers[r].rank = r;
    peers[r].host = hosts[r];
    const std::string value = control.wait(kAddressKeyPrefix + std::to_string(r), options.join_timeout);
    if (value.empty() || (value[0] != kAddressFollows && value[0] != kOpenFailed)) {
      throw PeerError(r, hosts[r], "published a malformed fabric address (" + std::to_string(value.size()) + " bytes)");
    }
    if (value[0] == kOpenFailed) throw PeerError(r, hosts[r], "could not open its transport: " + value.substr(1));
    peers[r].address = value.substr(1);
  }
  return peers;
}

}  // namespace

std::unique_ptr<Group> Group::join(const GroupOptions& options) {
  std::unique_ptr<Group> group(new Group());
  group->rank_ = options.rank;
  group->size_ = options.size;
  group->relay_ = std::make_shared<FailureRelay>();

  const std::string self_host = options.self_host.empty() ? local_host_name() : options.self_host;
  std::weak_ptr<FailureRelay> relay = group->relay_;
  if (options.standby) group->standby_ = start_standby(options);
  group->control_ = connect_control(
      options, self_host,
      [relay](const rendezvous::MemberLost& lost) {
        if (auto r = relay.lock()) r->member_lost(lost);
      },
      [relay](const rendezvous::View& view, const std::vector<rendezvous::MemberLost>& lost) {
        if (auto r = relay.lock()) r->view_changed(view, lost);
      });

  // Everyone must be present before the transport can pick a provider that
  // depends on where the peers run (shm only when all are on this host).
  group->control_->barrier("murmur/joined", options.join_timeout);
  if (group->standby_) {
    exchange_standbys(*group->control_, options, options.standby_host.empty() ? self_host : options.standby_host,
                      group->standby_->port());
  }
  const auto hosts = member_hosts(*group->control_, options.size);
  const bool all_here = std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h == self_host; });

  // A rank that cannot open its transport says so under its address key, so
  // that the others fail at once with its reason instead of waiting out the
  // join timeout for an address that will never come.
  const std::string own_key = kAddressKeyPrefix + std::to_string(options.rank);
  std::unique_ptr<Transport> transport;
  try {
    transport = open_transport(options, all_here);
  } catch (const std::exception& e) {
    try {
      group->control_->set(own_key, kOpenFailed + std::string(e.what()));
    } catch (const std::exception&) {
      // The original error is the one to report.
    }
    throw;
  }
  group->control_->set(own_key, kAddressFollows + transport->address());
  group->peers_ = read_peers(*group->control_, options, hosts);

  {
    std::lock_guard<std::mutex> lock(group->relay_->mutex);
    group->relay_->transport = transport.get();
    group->relay_->addresses = group->peers_;
    // Peers lost before the transport existed are failed now.
    for (const auto& l : group->relay_->lost) {
      transport->fail_peer(l.rank, std::make_exception_ptr(PeerError(l.rank, l.host, l.reason)));
    }
    group->relay_->view = group->relay_->to_view_locked(group->control_->view());
  }
  group->transport_ = std::move(transport);
  group->transport_->connect(group->peers_);
  group->control_->barrier("murmur/connected", options.join_timeout);
  fabric_log().debug("rank {} of {} joined over {}", group->rank_, group->size_, group->transport_->name());
  return group;
}

void Group::barrier(const std::string& name, std::chrono::milliseconds timeout) { control_->barrier(name, timeout); }

MembershipView Group::view() const {
  std::lock_guard<std::mutex> lock(relay_->mutex);
  return relay_->view;
}

void Group::on_view(std::function<void(const MembershipView&, const std::vector<LostPeer>&)> callback) {
  std::lock_guard<std::mutex> lock(relay_->mutex);
  relay_->on_view = std::move(callback);
}

Group::SuspectVerdict Group::suspect(int rank, Evidence evidence, const std::string& reason) {
  return control_->suspect(rank, evidence, reason);
}

std::vector<Group::LostPeer> Group::lost_peers() const {
  std::lock_guard<std::mutex> lock(relay_->mutex);
  return relay_->lost;
}

std::vector<Group::LostPeer> Group::wait_for_lost_peers(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(relay_->mutex);
  relay_->lost_cv.wait_until(lock, deadline, [this] { return !relay_->lost.empty(); });
  return relay_->lost;
}

Group::~Group() {
  if (relay_) {
    std::lock_guard<std::mutex> lock(relay_->mutex);
    relay_->transport = nullptr;
  }
  transport_.reset();
  if (control_) {
    try {
      control_->leave();
    } catch (const std::exception& e) {
      fabric_log().warn("leaving the rendezvous: {}", e.what());
    }
  }
}

}  // namespace murmur::fabric
