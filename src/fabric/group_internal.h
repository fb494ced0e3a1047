// Internals of Group shared by group.cc (join, accessors) and group_join.cc
// (join_running, the view thread): the relay that carries the rendezvous'
// losses and views to the transport and the on_view callback, the key
// scheme, and the steps of joining. Internal.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/group.h"
#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/server.h"

namespace murmur::fabric {

// Forwards the rendezvous' losses to the transport at once (on the client's
// io thread) and queues every view for the Group's view thread, which adds
// joiners to the transport before the on_view callback sees them. The Group
// detaches it before the transport dies.
struct Group::FailureRelay {
  mutable std::mutex mutex;  // guards everything below; leaf lock
  std::condition_variable lost_cv;
  Transport* transport = nullptr;
  std::vector<LostPeer> lost;
  std::set<int> gone;               // ranks already lost (and failed, once known to the transport)
  std::vector<PeerInfo> addresses;  // by rank: every member this transport knows (rank -1: absent)
  std::vector<std::pair<int, rendezvous::Endpoint>> standbys;
  MembershipView view;
  MembershipView entry_view;  // Group::entry_view()
  std::function<void(const MembershipView&, const std::vector<LostPeer>&)> on_view;
  // The view thread runs a copy of on_view outside the lock; Group::on_view
  // waits on on_view_idle until no copy runs, so that a caller that replaces
  // the callback may then destroy what the old one used.
  bool on_view_running = false;
  std::condition_variable on_view_idle;
  // Views not yet handled by the view thread, oldest first.
  struct Pending {
    rendezvous::View view;
    std::vector<LostPeer> lost;
  };
  std::deque<Pending> pending;
  std::condition_variable pending_cv;
  bool stopping = false;

  void member_lost(const rendezvous::MemberLost& lost) {
    std::unique_lock<std::mutex> lock(mutex);
    if (lost.rank < 0) {
      // The rendezvous itself is gone: nothing names a peer, so only log.
      fabric_log().error("control plane lost: {}", lost.reason);
      return;
    }
    fail_locked(lost);
  }

  // Called with mutex held; once per rank. A rank the transport does not
  // know yet (a joiner lost before the view thread added it) is failed when
  // it is added.
  void fail_locked(const rendezvous::MemberLost& lost) {
    if (!gone.insert(lost.rank).second) return;
    auto reason = lost.left_cleanly ? std::string("left the job") : lost.reason;
    if (!lost.left_cleanly) {
      fabric_log().warn("peer rank {} ({}) lost: {}", lost.rank, lost.host, reason);
      this->lost.push_back({lost.rank, lost.host, reason});
      lost_cv.notify_all();
    }
    if (transport != nullptr && lost.rank < static_cast<int>(addresses.size())) {
      transport->fail_peer(lost.rank, std::make_exception_ptr(PeerError(lost.rank, lost.host, reason)));
    }
  }

  MembershipView to_view_locked(const rendezvous::View& v) const {
    MembershipView out;
    out.generation = v.generation;
    out.joined = v.joined;
    for (const auto& m : v.members) {
      PeerInfo p{m.rank, m.host, ""};
      if (m.rank >= 0 && m.rank < static_cast<int>(addresses.size())) p.address = addresses[m.rank].address;
      out.members.push_back(std::move(p));
    }
    return out;
  }

  // The queued view that admitted `joiner`, if it is still queued: the
  // client's current view may already be a later one (another joiner
  // admitted right after), and a joiner must enter in its own.
  std::optional<rendezvous::View> queued_admitting(int joiner) const {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& p : pending) {
      if (std::find(p.view.joined.begin(), p.view.joined.end(), joiner) != p.view.joined.end()) return p.view;
    }
    return std::nullopt;
  }

  // Client io thread: fails the lost at once, queues the view.
  void view_changed(const rendezvous::View& v, const std::vector<rendezvous::MemberLost>& lost_now) {
    std::lock_guard<std::mutex> lock(mutex);
    Pending p{v, {}};
    for (const auto& l : lost_now) {
      fail_locked(l);
      p.lost.push_back({l.rank, l.host, l.left_cleanly ? std::string("left the job") : l.reason});
    }
    pending.push_back(std::move(p));
    pending_cv.notify_all();
  }
};

namespace group_detail {

// An address key's value is one of these bytes followed by the address, or
// by the reason the rank could not open its transport.
inline constexpr char kAddressFollows = 'A';
inline constexpr char kOpenFailed = 'E';
inline const std::string kAddressKeyPrefix = "murmur/fabric-address/";
inline const std::string kStandbyKeyPrefix = "murmur/standby/";
inline const std::string kMachineKeyPrefix = "murmur/machine/";
// Set by every member once the job's first "murmur/connected" barrier passed.
inline const std::string kJobRunningKey = "murmur/running";
// murmur/admitted/<joiner>/<member>: set by the member once it add_peer'd the joiner.
inline std::string admitted_key(int joiner, int member) {
  return "murmur/admitted/" + std::to_string(joiner) + "/" + std::to_string(member);
}

// The control-plane client of this rank, with `on_lost` called (on the
// client's io thread) for every member the rendezvous declares lost.
std::unique_ptr<rendezvous::Client> connect_control(
    const GroupOptions& options, const std::string& self_host,
    std::function<void(const rendezvous::MemberLost&)> on_lost,
    std::function<void(const rendezvous::View&, const std::vector<rendezvous::MemberLost>&)> on_view, bool join);
// The same, wired to `relay` (held weakly: the client may outlive it briefly).
std::unique_ptr<rendezvous::Client> connect_relayed_control(const std::shared_ptr<Group::FailureRelay>& relay,
                                                            const GroupOptions& options, const std::string& self_host,
                                                            bool join);
// This member's idle standby rendezvous server, listening on an ephemeral port.
std::unique_ptr<rendezvous::Server> start_standby(const GroupOptions& options);
// "host:port" as published under a standby key; nullopt (logged) when malformed.
std::optional<rendezvous::Endpoint> parse_standby(int rank, const std::string& value);
// Where the others reach this member's standby: options.standby_host if
// set, else the address through which this member reaches the rendezvous
// server (a host name may resolve to loopback, as Debian's /etc/hosts maps
// the machine's own name, or not at all), else self_host when that address
// is loopback (the server runs here; the name is the best guess).
std::string standby_host(const GroupOptions& options, const rendezvous::Client& control, const std::string& self_host);
// Publishes this member's standby and hands every member's to the client, so
// that it can fail over. Every rank publishes before anyone reads (gather).
std::vector<std::pair<int, rendezvous::Endpoint>> exchange_standbys(rendezvous::Client& control,
                                                                    const GroupOptions& options,
                                                                    const std::string& host, std::uint16_t port);
// This member's host name as peers and logs see it: options.self_host, else
// gethostname().
std::string self_host_of(const GroupOptions& options);
// The host of every rank below `size`, as the members told the rendezvous.
std::vector<std::string> member_hosts(rendezvous::Client& control, int size);
// options.machine, else common/host.h's machine_identity().
std::string machine_of(const GroupOptions& options);
// Where the other ranks run, seen from this one: what the transport's
// provider and bind address depend on.
struct Locality {
  bool all_here = false;         // every rank on this machine
  bool machines_shared = false;  // not all_here, but two ranks (any) share a machine
  std::string elsewhere;         // for messages: "rank R (host)" of one not on this machine, if any
};
// `machines[r]` and `hosts[r]` of every rank r known (an empty machine: not
// known, on a machine of its own); `self` is this rank. Every rank that
// reads the same lists gets the same machines_shared.
Locality locality_of(const std::vector<std::string>& machines, const std::vector<std::string>& hosts, int self);
// This rank's transport, wrapped in the shaper when a link profile asks.
std::unique_ptr<Transport> open_transport(const GroupOptions& options, const Locality& locality);
// Opens the transport and publishes its address under the own address key,
// or, if it cannot be opened, the reason (then rethrows).
std::unique_ptr<Transport> open_and_publish(rendezvous::Client& control, const GroupOptions& options,
                                            const Locality& locality);
// `rank`'s published address; PeerError naming it when it could not open its
// transport, published something malformed, or is out of the client's view
// (left or lost) while the address is missing; FabricError on timeout.
std::string read_address(rendezvous::Client& control, int rank, const std::string& host,
                         std::chrono::milliseconds timeout);

}  // namespace group_detail
}  // namespace murmur::fabric
