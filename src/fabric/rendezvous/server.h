// The rendezvous server: the control plane's meeting point. Members connect,
// authenticate with the cluster token (Hello), then use a key/value store,
// named barriers and a membership list (see client.h for the calls), and
// heartbeat. A member whose connection closes without a leave, or that sends
// nothing for heartbeat_timeout, is declared lost: every other member gets a
// MemberLost push, and pending barriers fail.
//
// Views: once all `size` ranks joined, the server owns the job's membership
// view (generation 0, then one more per change) and pushes every new view to
// every live member, in order, from its one io thread. A member may suspect
// another (Request.suspect): a transport error declares it lost at once;
// silence does so only if its last message is older than heartbeat_stale.
// Suspicions from a rank outside the view are answered "not a member".
//
// Quorum: a server publishes a view without members it lost (not those that
// left) only once it hears from a quorum of the view they were lost from
// after the loss: more than half of it, or exactly half with its lowest
// rank. A server cut off with a minority of the job by a partition cannot
// tell a partition from a mass failure, and the larger side may be going on
// with a standby; so when no quorum is heard within heartbeat_stale it
// stands down: it tells every member it holds that it is out (a view
// without it, naming why), ends the job here, and refuses the job's
// members that come back (rejoining or joining Hellos) until a fresh Hello
// starts another job. Two sides of one
// job never both go on (split brain); the price is that a job which loses
// half its members or more at once, without the lowest rank, stops.
//
// Standby: every member hosts an idle Server; after the job's server is lost
// the members reconnect to one of them with rejoining Hellos carrying their
// last view. It adopts the highest generation it is told about, pushes it to
// members holding an older one, and declares lost whoever of that view has
// not rejoined within failover_grace, if those that did are a quorum;
// otherwise it stands down.
//
// Threads: the server serves on one thread of its own (one io_context); the
// constructor returns once it listens. All methods are thread-safe.
// The key/value store belongs to the job: when the last member leaves or is
// lost, its keys are dropped, so one server can host one job after another.
// Malformed, oversized or unauthenticated input closes that one connection,
// is logged (warn, naming the remote endpoint and rank when known) and counted
// in rejected_count(); the server keeps serving everyone else.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace murmur::fabric::rendezvous {

struct ServerOptions {
  std::string bind_host = "0.0.0.0";
  std::uint16_t port = 0;  // 0: ephemeral (see Server::port())
  std::string token;       // cluster token; must match the client's
  // Non-empty: every Hello must prove this job token (common/job_token.h)
  // by answering a Challenge; empty: no proof is asked (docs/security.md).
  std::string job_token;
  // Connections that have not had a Hello accepted yet: at most this many
  // at once. The next one past it closes the oldest of them (logged once per
  // source address), so idle or slow connections cannot keep a member out:
  // a member says Hello right after connecting.
  std::size_t max_connections_before_hello = 64;
  // A joined member silent this long is lost. Judged when the server runs on
  // time: one that wakes from a stall of its own (its host froze) first
  // gives the members' waiting frames a quarter of this to be read.
  std::chrono::milliseconds heartbeat_timeout{5000};
  std::size_t max_message_bytes = 1 << 20;
  // Keys and values the key/value store may hold in all; a set past it is
  // answered with an error (the job's keys are a few per member).
  std::size_t max_store_bytes = std::size_t{256} << 20;
  // A connection that has not said Hello within this time (since it was
  // accepted, or since its last frame) is dropped.
  std::chrono::milliseconds hello_timeout{10000};
  // A silent-evidence suspicion declares a member whose last message is older
  // than this (3 x the members' default heartbeat interval): shorter than
  // the least deadline a neighbour suspects after (its floor, 2 s by
  // default), so that a stopped member is declared at the first suspicion
  // and the others lose the deadline, not the deadline plus this.
  std::chrono::milliseconds heartbeat_stale{1500};
  // After a failover, members of the adopted view that have not rejoined
  // within this are declared lost.
  std::chrono::milliseconds failover_grace{5000};
  // Whether losses wait for a quorum (see "Quorum" above). Off: every side
  // of a partition goes on with the members it reaches.
  bool require_quorum = true;
};

class Server final {
 public:
  // Binds and starts serving. Throws FabricError naming host:port and the
  // reason if it cannot resolve or bind.
  explicit Server(ServerOptions options);
  // Stops serving, closes every connection and joins the thread. Never throws.
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port actually bound (useful with port 0).
  std::uint16_t port() const;
  // Connections and messages refused so far (bad framing, bad token,
  // duplicate rank, requests before Hello, ...).
  std::size_t rejected_count() const;
  // Members joined now (ranks that said Hello and have not left or been lost).
  std::size_t member_count() const;
  // The current view's generation, or nullopt before all ranks joined.
  std::optional<std::uint64_t> generation() const;
  // Bytes of keys and values the key/value store holds now (what
  // ServerOptions::max_store_bytes bounds).
  std::size_t store_bytes() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace murmur::fabric::rendezvous
