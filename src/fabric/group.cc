#include "fabric/group.h"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "common/host.h"
#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/group_internal.h"
#include "fabric/network_interface.h"
#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/server.h"
#include "fabric/shaper/shaped_transport.h"
#include "fabric/shaper/shaper_config.h"

namespace murmur::fabric {

namespace group_detail {

std::unique_ptr<rendezvous::Client> connect_control(
    const GroupOptions& options, const std::string& self_host,
    std::function<void(const rendezvous::MemberLost&)> on_lost,
    std::function<void(const rendezvous::View&, const std::vector<rendezvous::MemberLost>&)> on_view, bool join) {
  rendezvous::ClientOptions client_options;
  client_options.server_host = options.rendezvous_host;
  client_options.server_port = options.rendezvous_port;
  client_options.token = options.token;
  client_options.job_token = options.job_token;
  client_options.rank = options.rank;
  client_options.size = options.size;
  client_options.self_host = self_host;
  client_options.heartbeat_interval = options.heartbeat_interval;
  client_options.connect_timeout = options.join_timeout;
  client_options.heartbeat_stale = options.heartbeat_stale;
  client_options.join = join;
  client_options.signature = options.job_signature;
  auto control = std::make_unique<rendezvous::Client>(client_options);
  control->on_member_lost(std::move(on_lost));
  control->on_view(std::move(on_view));
  return control;
}

std::unique_ptr<rendezvous::Server> start_standby(const GroupOptions& options) {
  rendezvous::ServerOptions server_options;
  server_options.bind_host = options.standby_bind_host;
  server_options.token = options.token;
  server_options.job_token = options.job_token;
  const auto stale = options.heartbeat_stale.count() > 0 ? options.heartbeat_stale : options.heartbeat_interval * 3;
  server_options.heartbeat_stale = stale;
  server_options.heartbeat_timeout = std::max<std::chrono::milliseconds>(stale, std::chrono::milliseconds(5000));
  server_options.failover_grace = options.failover_grace;
  return std::make_unique<rendezvous::Server>(server_options);
}

std::optional<rendezvous::Endpoint> parse_standby(int rank, const std::string& v) {
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
    fabric_log().warn("rank {} published a malformed standby address ({} bytes); not failing over to it", rank,
                      v.size());
    return std::nullopt;
  }
  return rendezvous::Endpoint{v.substr(0, colon), static_cast<std::uint16_t>(port_number)};
}

std::string standby_host(const GroupOptions& options, const rendezvous::Client& control, const std::string& self_host) {
  if (!options.standby_host.empty()) return options.standby_host;
  const std::string local = control.local_address();
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(local, ec);
  if (ec || address.is_loopback() || address.is_unspecified()) return self_host;
  return local;  // parse_standby splits at the last colon: IPv6 needs no brackets
}

std::vector<std::pair<int, rendezvous::Endpoint>> exchange_standbys(rendezvous::Client& control,
                                                                    const GroupOptions& options,
                                                                    const std::string& host, std::uint16_t port) {
  control.set(kStandbyKeyPrefix + std::to_string(options.rank), host + ":" + std::to_string(port));
  const auto values = control.gather(kStandbyKeyPrefix, static_cast<std::uint32_t>(options.size), options.join_timeout);
  std::vector<std::pair<int, rendezvous::Endpoint>> standbys;
  for (int r = 0; r < options.size; ++r) {
    if (auto where = parse_standby(r, values[r])) standbys.push_back({r, *where});
  }
  control.set_standbys(standbys);
  return standbys;
}

std::string self_host_of(const GroupOptions& options) {
  return options.self_host.empty() ? local_host_name() : options.self_host;
}

std::vector<std::string> member_hosts(rendezvous::Client& control, int size) {
  std::vector<std::string> hosts(size);
  for (const auto& m : control.members()) {
    if (m.rank >= 0 && m.rank < size) hosts[m.rank] = m.host;
  }
  return hosts;
}

// The address options.interface names on this host; the error says which
// rank and host lack it.
std::string interface_address(const GroupOptions& options) {
  try {
    const std::string address = resolve_interface(options.interface);
    fabric_log().info("rank {} binds its data plane to {} (interface '{}')", options.rank, address, options.interface);
    return address;
  } catch (const std::invalid_argument& e) {
    throw FabricError("rank " + std::to_string(options.rank) + " on " + self_host_of(options) + ": " + e.what() +
                      " (PeerConfig::interface, --interface or $MURMUR_INTERFACE)");
  }
}

std::string machine_of(const GroupOptions& options) {
  return options.machine.empty() ? machine_identity() : options.machine;
}

Locality locality_of(const std::vector<std::string>& machines, const std::vector<std::string>& hosts, int self) {
  Locality here;
  here.all_here = true;
  const std::string& own = machines.at(self);
  std::set<std::string> seen;
  bool shared = false;
  for (std::size_t r = 0; r < machines.size(); ++r) {
    if (!machines[r].empty() && !seen.insert(machines[r]).second) shared = true;
    if (static_cast<int>(r) == self || (!own.empty() && machines[r] == own)) continue;
    if (here.all_here) {
      const std::string host = r < hosts.size() && !hosts[r].empty() ? hosts[r] : "unknown host";
      here.elsewhere = "rank " + std::to_string(r) + " (" + host + ")";
    }
    here.all_here = false;
  }
  here.machines_shared = shared && !here.all_here;
  return here;
}

std::unique_ptr<Transport> open_transport(const GroupOptions& options, const Locality& locality) {
  TransportOptions transport_options = options.transport;
  if (transport_options.backend == "libfabric" && transport_options.provider == "shm" && !locality.all_here) {
    throw FabricError("rank " + std::to_string(options.rank) + " on " + self_host_of(options) +
                      ": provider shm reaches only peers on this machine, and " + locality.elsewhere +
                      " runs on another (use shm+tcp, or auto)");
  }
  if (!options.interface.empty()) transport_options.bind_host = interface_address(options);
  transport_options.job_token = options.job_token;
  transport_options.rank = options.rank;
  transport_options.size = options.size;
  transport_options.peers_on_this_host = locality.all_here;
  transport_options.ranks_share_machines = locality.machines_shared;
  transport_options.machine = machine_of(options);
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

std::string read_address(rendezvous::Client& control, int rank, const std::string& host,
                         std::chrono::milliseconds timeout) {
  // Waited for in slices: a rank that left or was lost before it published
  // (killed during start-up, or its host stalled past the server's
  // deadline) is out of the next view, and the wait ends then, naming it,
  // instead of at the join timeout.
  constexpr std::chrono::milliseconds kSlice{500};
  const std::string key = kAddressKeyPrefix + std::to_string(rank);
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  std::string value;
  for (;;) {
    const auto started = std::chrono::steady_clock::now();
    const auto slice = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(give_up - started),
                                  std::chrono::milliseconds(0), kSlice);
    try {
      value = control.wait(key, slice);
      break;
    } catch (const FabricError& e) {
      // A wait that ended before half its slice did not time out (the
      // server's timer runs the slice less the request's transit): the
      // error (the client broken, the server gone without a standby) is
      // the caller's. One that ends later for such a reason ends the next
      // wait at once, and lands here.
      const auto now = std::chrono::steady_clock::now();
      if (now - started < slice / 2) throw;
      if (now >= give_up) {
        throw FabricError("rank " + std::to_string(rank) + " (" + host + ") did not publish its fabric address ('" +
                          key + "') within " + std::to_string(timeout.count()) + " ms (last wait: " + e.what() + ")");
      }
    }
    const auto view = control.view();
    const bool in_view = std::any_of(view.members.begin(), view.members.end(),
                                     [&](const rendezvous::Member& m) { return m.rank == rank; });
    if (!view.members.empty() && !in_view) {
      throw PeerError(rank, host,
                      "left or was lost before it published its fabric address (membership view " +
                          std::to_string(view.generation) + " does not include it)");
    }
  }
  if (value.empty() || (value[0] != kAddressFollows && value[0] != kOpenFailed)) {
    throw PeerError(rank, host, "published a malformed fabric address (" + std::to_string(value.size()) + " bytes)");
  }
  if (value[0] == kOpenFailed) throw PeerError(rank, host, "could not open its transport: " + value.substr(1));
  return value.substr(1);
}

std::unique_ptr<Transport> open_and_publish(rendezvous::Client& control, const GroupOptions& options,
                                            const Locality& locality) {
  const std::string own_key = kAddressKeyPrefix + std::to_string(options.rank);
  std::unique_ptr<Transport> transport;
  try {
    transport = open_transport(options, locality);
  } catch (const std::exception& e) {
    try {
      control.set(own_key, kOpenFailed + std::string(e.what()));
    } catch (const std::exception&) {
      // The original error is the one to report.
    }
    throw;
  }
  control.set(own_key, kAddressFollows + transport->address());
  return transport;
}

}  // namespace group_detail

namespace {
using namespace group_detail;

// Every rank's published address; PeerError naming a rank that could not
// open its transport, or published something else.
std::vector<PeerInfo> read_peers(rendezvous::Client& control, const GroupOptions& options,
                                 const std::vector<std::string>& hosts) {
  std::vector<PeerInfo> peers(options.size);
  for (int r = 0; r < options.size; ++r) {
    peers[r].rank = r;
    peers[r].host = hosts[r];
    peers[r].address = read_address(control, r, hosts[r], options.join_timeout);
  }
  return peers;
}

}  // namespace

std::unique_ptr<Group> Group::join(const GroupOptions& options) {
  std::unique_ptr<Group> group(new Group());
  group->rank_ = options.rank;
  group->size_ = options.size;
  group->relay_ = std::make_shared<FailureRelay>();

  const std::string self_host = self_host_of(options);
  if (options.standby) group->standby_ = start_standby(options);
  group->control_ = connect_relayed_control(group->relay_, options, self_host, /*join=*/false);

  // Everyone must be present, and have said which machine it runs on,
  // before the transport can pick a provider and an address that depend on
  // where the peers run (loopback and shm only for peers on this machine).
  const std::string machine = machine_of(options);
  group->control_->set(kMachineKeyPrefix + std::to_string(options.rank), machine);
  group->control_->barrier("murmur/joined", options.join_timeout);
  if (group->standby_) {
    auto standbys = exchange_standbys(*group->control_, options, standby_host(options, *group->control_, self_host),
                                      group->standby_->port());
    std::lock_guard<std::mutex> lock(group->relay_->mutex);
    group->relay_->standbys = std::move(standbys);
  }
  const auto hosts = member_hosts(*group->control_, options.size);
  const auto machines =
      group->control_->gather(kMachineKeyPrefix, static_cast<std::uint32_t>(options.size), options.join_timeout);
  const Locality locality = locality_of(machines, hosts, options.rank);

  // A rank that cannot open its transport says so under its address key, so
  // that the others fail at once with its reason instead of waiting out the
  // join timeout for an address that will never come.
  auto transport = open_and_publish(*group->control_, options, locality);
  auto peers = read_peers(*group->control_, options, hosts);
  group->attach(std::move(transport), peers, group->control_->view());
  group->transport_->connect(peers);
  group->control_->barrier("murmur/connected", options.join_timeout);
  // Joiners wait for this before asking to be admitted: a joiner admitted
  // earlier would count in the barriers above and stall them.
  group->control_->set(kJobRunningKey, "1");
  group->start_view_thread(options);
  fabric_log().debug("rank {} of {} joined over {}", group->rank_, group->size_, group->transport_->name());
  return group;
}

void Group::attach(std::unique_ptr<Transport> transport, const std::vector<PeerInfo>& peers,
                   const rendezvous::View& view) {
  std::lock_guard<std::mutex> lock(relay_->mutex);
  relay_->transport = transport.get();
  relay_->addresses = peers;
  // Peers lost before the transport existed are failed now.
  for (int rank : relay_->gone) {
    if (rank >= static_cast<int>(peers.size()) || peers[rank].rank < 0) continue;
    transport->fail_peer(rank, std::make_exception_ptr(PeerError(rank, peers[rank].host, "lost while joining")));
  }
  relay_->view = relay_->to_view_locked(view);
  relay_->entry_view = relay_->view;
  transport_ = std::move(transport);
}

void Group::barrier(const std::string& name, std::chrono::milliseconds timeout) { control_->barrier(name, timeout); }

std::vector<PeerInfo> Group::peers() const {
  std::lock_guard<std::mutex> lock(relay_->mutex);
  return relay_->addresses;
}

MembershipView Group::view() const {
  std::lock_guard<std::mutex> lock(relay_->mutex);
  return relay_->view;
}

MembershipView Group::entry_view() const {
  std::lock_guard<std::mutex> lock(relay_->mutex);
  return relay_->entry_view;
}

void Group::on_view(std::function<void(const MembershipView&, const std::vector<LostPeer>&)> callback) {
  std::unique_lock<std::mutex> lock(relay_->mutex);
  relay_->on_view = std::move(callback);
  // The old callback may be running on the view thread; its owner is about
  // to go (Membership's destructor clears it). From inside the callback
  // there is nothing to wait for: the caller is that run.
  if (std::this_thread::get_id() == view_thread_.get_id()) return;
  relay_->on_view_idle.wait(lock, [this] { return !relay_->on_view_running; });
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
  stop_view_thread();
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
