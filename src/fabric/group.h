// Group: how one process joins a murmur job. It connects to the rendezvous,
// waits for every rank, opens the data-plane transport, exchanges fabric
// addresses, connects, and wires failure detection: when the rendezvous
// declares a member lost (its connection closed, or its heartbeats stopped
// for the server's heartbeat timeout), every pending and later request to
// that member fails with a PeerError naming its rank and host.
//
// Blocking: join() blocks until every rank has joined and connected, or
// throws FabricError after options.join_timeout. barrier() blocks.
// Thread safety: transport() is thread-safe (see transport.h); barrier() and
// control() calls are thread-safe.
// Ownership: the Group owns the rendezvous client and the transport; the
// destructor leaves the rendezvous (a clean leave) and closes the transport.
//
// Joining a running job: join_running() below; members add each joiner to
// their transport on the Group's view thread before the on_view callback
// reports it.
//
// Views and failover: the rendezvous pushes a membership view (generation,
// live members) at every change; the Group passes each lost member to
// transport().fail_peer() and then to the on_view callback. With
// options.standby, each member hosts an idle standby rendezvous server and
// publishes its address at join, so that the control plane (view(), on_view,
// suspect, control(), barrier()) survives the loss of the rendezvous server
// after join (rendezvous/client.h, "Failover").
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/job_token.h"
#include "fabric/rendezvous/client.h"
#include "fabric/transport.h"
#include "fabric/transport_options.h"

namespace murmur::fabric {

namespace rendezvous {
class Server;
}  // namespace rendezvous

struct MembershipView {
  std::uint64_t generation = 0;
  std::vector<PeerInfo> members;  // ascending rank
  std::vector<int> joined;        // admitted in the change that made this view
};

struct GroupOptions {
  int rank = 0;
  int size = 1;
  std::string rendezvous_host = "127.0.0.1";
  std::uint16_t rendezvous_port = 0;
  std::string token;
  // The job token every connection proves at set-up, to the rendezvous and
  // between peers (common/job_token.h, docs/security.md); it overrides
  // transport.job_token. Defaults to $MURMUR_JOB_TOKEN, which murmur-run
  // sets; empty: unauthenticated, as before tokens existed.
  std::string job_token = job_token::from_environment();
  // This host's name as peers and logs should see it; empty: gethostname().
  std::string self_host;
  // Which machine this rank runs on, for the data plane (common/host.h,
  // machine_identity: ranks with equal strings share loopback and shared
  // memory); empty: detected. Ranks publish it before the transport opens,
  // which then binds loopback only when every rank is on this machine and
  // uses shm to the ranks that are (TransportOptions::provider).
  std::string machine;
  // Data plane; rank and size are filled in from above.
  TransportOptions transport;
  // The network the data plane binds to: an interface name or a subnet
  // (network_interface.h), resolved when the transport opens, so that a rank
  // without it fails the join for everyone at once, naming itself and the
  // interfaces it has. Empty: transport.bind_host as given.
  std::string interface;
  // Link emulation: a profile spec ("10gbe", "lat=2ms,bw=100mbit") or
  // "@path" to a profile file; empty for none. See docs/link-profiles.md.
  std::string link_profile;
  std::chrono::milliseconds heartbeat_interval{500};  // rendezvous/client.h
  std::chrono::milliseconds join_timeout{60000};
  // The rendezvous server counts as lost after this long without an answer
  // to heartbeats (0: 6 x heartbeat_interval); the standby declares a
  // silent suspect lost after this long without a heartbeat (0: 3 x
  // heartbeat_interval).
  std::chrono::milliseconds heartbeat_stale{0};
  // After a failover, members that have not reconnected within this are lost.
  std::chrono::milliseconds failover_grace{5000};
  // Host this member's standby rendezvous server (listening on an ephemeral
  // port of standby_bind_host) and fail over to the members' standbys.
  bool standby = true;
  std::string standby_bind_host = "0.0.0.0";
  // How the others reach this member's standby; empty: the address of its
  // connection to the rendezvous server, or self_host if that is loopback.
  std::string standby_host;
  // Who may join this job later: an opaque "key=value;key=value" string (the
  // Peer puts its build id, wire version, tensor layout and gossip flags in
  // it). The first member's is the job's; join_running() is refused, naming
  // each differing key and both values, when the joiner's differs.
  std::string job_signature;
};

class Group final {
 public:
  static std::unique_ptr<Group> join(const GroupOptions& options);
  // Joins a job that is already running, as a new member (options.rank and
  // options.size are ignored): says a joining Hello and gets a new id (every
  // id ever seen + 1), waits until the job's first members are connected,
  // opens its transport with rank = id and size = id + 1, publishes its
  // address and standby, asks to be admitted, and once the view admitting it
  // arrives connect()s with every live member (absent entries for ids not in
  // that view). Returns when every member of that view has add_peer'd it
  // (each sets murmur/admitted/<id>/<member>; a member lost meanwhile is
  // skipped once the view lacks it). Ordering (transport.h, "Joining a
  // running job"): the joiner may send once this returns; members know the
  // joiner only from the on_view callback of the view that admits it, and
  // must not send to it before it has returned from join_running. The
  // gossip obeys this without more: members first use a new view at its
  // first round, which starts after an agreement the joiner takes part in
  // (so after join_running returned). Other callers order it themselves,
  // e.g. with a barrier, which counts the joiner once admitted.
  // Blocks; FabricError with the server's reason when refused (a different
  // job signature names each differing key), or after options.join_timeout.
  static std::unique_ptr<Group> join_running(const GroupOptions& options);
  ~Group();

  // The member id (for a joiner: the one the rendezvous assigned).
  int rank() const { return rank_; }
  // The transport's size when the Group was made (ids of later joiners are
  // above it; see peers()).
  int size() const { return size_; }
  // Every member the transport knows, by rank (rank -1: absent; lost ones
  // keep their entry). Grows when joiners are added, before the on_view
  // callback that reports them. A copy, under a lock: thread-safe.
  std::vector<PeerInfo> peers() const;
  Transport& transport() { return *transport_; }
  rendezvous::Client& control() { return *control_; }

  // The current view (a copy). Thread-safe.
  MembershipView view() const;
  // The view this member entered in: the job's first view for a member
  // that started with it, the one that admitted it for a joiner (view()
  // may be newer by then: later views arrive on the view thread, possibly
  // before the caller registered on_view). A copy; thread-safe.
  MembershipView entry_view() const;
  // Replaces the callback; called on the Group's view thread for every new
  // view, in order, after the lost members have been passed to
  // transport().fail_peer() and the joined ones to transport().add_peer()
  // (so peers() holds them). Must not block or call back into the Group
  // (replacing itself through on_view is the exception). When on_view
  // returns, the previous callback is not running and will not be called
  // again: it waits for a run in progress, so an owner may clear its
  // callback and then free what it captured. Called from inside the
  // callback, it does not wait.
  struct LostPeer;
  void on_view(std::function<void(const MembershipView& view, const std::vector<LostPeer>& lost)> callback);
  using Evidence = rendezvous::Evidence;
  using SuspectVerdict = rendezvous::SuspectVerdict;
  // Blocks for one round trip to the membership service (bounded;
  // kUnreachable if none answers).
  SuspectVerdict suspect(int rank, Evidence evidence, const std::string& reason);

  // Every rank reaches `name` before any returns. FabricError on timeout or
  // when a member is lost meanwhile.
  void barrier(const std::string& name, std::chrono::milliseconds timeout);

  // Peers the control plane has declared lost (died or hung; clean leaves
  // are not listed), in the order it did so. A transport error says that a
  // link failed; this says which peer the job lost, which is what to report.
  struct LostPeer {
    int rank;
    std::string host;
    std::string reason;
  };
  std::vector<LostPeer> lost_peers() const;
  // Waits until at least one peer has been declared lost or the deadline
  // passes, and returns lost_peers().
  std::vector<LostPeer> wait_for_lost_peers(std::chrono::steady_clock::time_point deadline) const;

  // Internal (group_internal.h): carries the rendezvous' losses and views.
  struct FailureRelay;

 private:
  Group() = default;

  // Hands the transport to the relay (failing peers lost meanwhile) with
  // the members' addresses and the current view, then owns it.
  void attach(std::unique_ptr<Transport> transport, const std::vector<PeerInfo>& peers, const rendezvous::View& view);
  // The view thread: adds each view's joiners to the transport, tells them
  // (admitted key) and then runs the on_view callback (group_join.cc).
  void start_view_thread(const GroupOptions& options);
  void stop_view_thread();
  void run_views(std::chrono::milliseconds timeout);
  void add_joiner(int joiner, const std::string& host, std::chrono::milliseconds timeout);

  int rank_ = 0;
  int size_ = 1;
  // Declared in creation order so they are destroyed in reverse: the relay
  // outlives neither; the transport closes before the client leaves.
  std::shared_ptr<FailureRelay> relay_;
  std::unique_ptr<rendezvous::Server> standby_;  // outlives the client: others may still use it
  std::unique_ptr<rendezvous::Client> control_;
  std::unique_ptr<Transport> transport_;
  std::thread view_thread_;  // last: stopped first (destructor)
};

}  // namespace murmur::fabric
