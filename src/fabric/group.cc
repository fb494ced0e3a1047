#include "fabric/group.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "common/host.h"
#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/client.h"
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

  void member_lost(const rendezvous::MemberLost& lost) {
    std::unique_lock<std::mutex> lock(mutex);
    if (lost.rank < 0) {
      // The rendezvous itself is gone: nothing names a peer, so only log.
      fabric_log().error("control plane lost: {}", lost.reason);
      return;
    }
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
};

namespace {
// An address key's value is one of these bytes followed by the address, or
// by the reason the rank could not open its transport.
constexpr char kAddressFollows = 'A';
constexpr char kOpenFailed = 'E';
const std::string kAddressKeyPrefix = "murmur/fabric-address/";

// The control-plane client of this rank, with `on_lost` called (on the
// client's io thread) for every member the rendezvous declares lost.
std::unique_ptr<rendezvous::Client> connect_control(const GroupOptions& options, const std::string& self_host,
                                                    std::function<void(const rendezvous::MemberLost&)> on_lost) {
  rendezvous::ClientOptions client_options;
  client_options.server_host = options.rendezvous_host;
  client_options.server_port = options.rendezvous_port;
  client_options.token = options.token;
  client_options.rank = options.rank;
  client_options.size = options.size;
  client_options.self_host = self_host;
  client_options.heartbeat_interval = options.heartbeat_interval;
  client_options.connect_timeout = options.join_timeout;
  auto control = std::make_unique<rendezvous::Client>(client_options);
  control->on_member_lost(std::move(on_lost));
  return control;
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
  group->control_ = connect_control(options, self_host, [relay](const rendezvous::MemberLost& lost) {
    if (auto r = relay.lock()) r->member_lost(lost);
  });

  // Everyone must be present before the transport can pick a provider that
  // depends on where the peers run (shm only when all are on this host).
  group->control_->barrier("murmur/joined", options.join_timeout);
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
  }
  group->transport_ = std::move(transport);
  group->transport_->connect(group->peers_);
  group->control_->barrier("murmur/connected", options.join_timeout);
  fabric_log().debug("rank {} of {} joined over {}", group->rank_, group->size_, group->transport_->name());
  return group;
}

void Group::barrier(const std::string& name, std::chrono::milliseconds timeout) { control_->barrier(name, timeout); }

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
