// A member's connection to the rendezvous server (server.h).
//
// Threads: every method is thread-safe. The client owns one io thread, which
// reads the server's answers and pushes, sends a heartbeat every
// heartbeat_interval (timers, no polling) and runs the on_member_lost
// callback. Calls block the calling thread until the server answers (or the
// stated timeout passes); none of them may be made from the callback.
//
// Joining a running job (options.join): the Hello asks for a new member id;
// the client is a pending joiner (it may set keys ending in "/<its id>",
// get and wait, and hears the views) until admit() makes it a member.
//
// Failures: a refusal, a timeout or a lost server connection throws
// FabricError (fabric/errors.h) with a message that says what happened.
//
// Failover: once the client knows the members' standby servers
// (set_standbys) and has a view, losing the server connection (EOF, error, or
// no answer to heartbeats for heartbeat_stale) makes it reconnect to the
// standby of the lowest-ranked member of its view, then the next, and say a
// rejoining Hello with its view. The last 1024 keys it set are set
// again there and every call in progress is sent again (wait/gather/barrier
// with their remaining time): callers see no error. Without standbys, after
// every standby refused, or once this rank was expelled from the view, the
// connection is lost for good: the member-lost callback is told with rank -1
// and every pending and later call throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace murmur::fabric::rendezvous {

struct Member {
  int rank;
  std::string host;
};

// rank -1 means the connection to the rendezvous server itself was lost; host
// then names the server.
struct MemberLost {
  int rank;
  std::string host;
  std::string reason;
  bool left_cleanly;
};

// The job's membership: generation 0 once all ranks joined, one more per
// change; members in ascending rank.
struct View {
  std::uint64_t generation = 0;
  std::vector<Member> members;
  std::vector<int> joined;  // admitted in the change that made this view (ascending)
};

enum class Evidence { kTransportError, kSilent };
enum class SuspectVerdict { kDeclared, kAlreadyLost, kAlive, kNotMember, kUnreachable };
const char* verdict_name(SuspectVerdict verdict);

// Where a member's standby server listens.
struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
};

struct ClientOptions {
  std::string server_host = "127.0.0.1";
  std::uint16_t server_port = 0;
  std::string token;
  // The job token to prove when the server challenges (common/job_token.h);
  // empty: none. A client with one refuses a server that does not challenge:
  // the two were configured apart, and that server believes anyone.
  std::string job_token;
  int rank = 0;
  int size = 1;
  std::string self_host;
  // Short, so that the server tells a stopped member from a slow one soon
  // after a neighbour's deadline (heartbeat_stale in server.h): a few tiny
  // messages a second.
  std::chrono::milliseconds heartbeat_interval{500};
  // Connecting is retried until then (the server may start later).
  std::chrono::milliseconds connect_timeout{30000};
  // How long set/get/members/leave wait for an answer; wait() and barrier()
  // wait their own timeout plus this much before giving up on the server.
  std::chrono::milliseconds request_timeout{30000};
  std::size_t max_message_bytes = 1 << 26;  // largest server message accepted
  // The server counts as lost when nothing (not even a heartbeat answer) came
  // from it for this long; 0: 6 x heartbeat_interval (3 s by default: a
  // failover is costly, so a busy server gets longer than a silent member).
  std::chrono::milliseconds heartbeat_stale{0};
  // How long one standby may take to accept and answer the rejoining Hello
  // before the next one in rank order is tried.
  std::chrono::milliseconds failover_connect_timeout{2000};
  // suspect() answers kUnreachable after this.
  std::chrono::milliseconds suspect_timeout{10000};
  // Say a rejoining Hello with this view instead of joining afresh (what a
  // failover does; set by hand only to test a server).
  std::optional<View> rejoin_view;
  // Join a running job: `rank` is ignored, the server assigns a new member
  // id (rank()) and the client is a pending joiner until admit().
  bool join = false;
  // This member's job signature ("key=value;key=value", opaque): the first
  // member's is the job's, and a joiner with a different one is refused.
  std::string signature;
};

class Client final {
 public:
  // Connects (retrying until connect_timeout) and says Hello. Throws
  // FabricError with the server's reason on refusal ("cluster token
  // mismatch", "rank 3 already joined from host X", "world size 4 differs
  // from 8", "job signature differs: job has period=4, joiner has
  // period=2") or on timeout.
  explicit Client(ClientOptions options);
  // leave()s if not done yet, then stops the io thread. Never throws.
  ~Client();

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // value: arbitrary bytes.
  void set(const std::string& key, const std::string& value);
  std::optional<std::string> get(const std::string& key);
  // Blocks until the key is set. Throws FabricError naming the key on timeout.
  std::string wait(const std::string& key, std::chrono::milliseconds timeout);
  // The values of prefix + "0" .. prefix + (count - 1), in that order, in
  // one reply once all are set: a collective's one key per rank without a
  // round trip per key. Throws FabricError on timeout (naming the missing
  // indices) or for a count past 16 x the world size.
  // `retire` (non-empty): once the gather is answered, the server erases
  // every key under that prefix, so that a long run's collectives do not
  // grow its store. A caller passes its previous collective's prefix: every
  // member has finished that one once all wrote this one. It must not cover
  // `prefix` itself (FabricError).
  std::vector<std::string> gather(const std::string& prefix, std::uint32_t count, std::chrono::milliseconds timeout,
                                  const std::string& retire = {});
  // Blocks until all `size` ranks reached the barrier `name`. Throws
  // FabricError on timeout (naming the ranks still missing) or when a member
  // is lost or leaves while waiting.
  void barrier(const std::string& name, std::chrono::milliseconds timeout);
  // The members currently joined, sorted by rank.
  std::vector<Member> members();
  // Replaces the callback. It runs on the client's io thread and must not
  // block (in particular it must not call this client's methods).
  void on_member_lost(std::function<void(const MemberLost&)> callback);
  // The last view received (generation 0 with no members before the job
  // started).
  View view() const;
  // The IP address this client's connection to the server has locally: the
  // interface through which this host reaches the job ("" before it
  // connected). A standby advertised there is reachable from wherever the
  // server is, unlike a host name that may resolve to loopback.
  std::string local_address() const;
  // Replaces the callback run on the io thread for every new view, in order,
  // with the members lost in that change. Must not block or call this client.
  void on_view(std::function<void(const View& view, const std::vector<MemberLost>& lost)> callback);
  // Reports `rank` as looking dead. Blocks for one round trip (at most
  // suspect_timeout; kUnreachable when no server answers).
  SuspectVerdict suspect(int rank, Evidence evidence, const std::string& reason);
  // Every member's standby server, by rank; enables failover. Thread-safe.
  void set_standbys(std::vector<std::pair<int, Endpoint>> standbys);
  // This member's id: options.rank, or the id the server assigned a joiner.
  int rank() const;
  // A pending joiner (options.join) asks to become a member. Blocks until
  // the server has pushed the view that admits it (so view() includes it
  // when this returns); FabricError on refusal or after `timeout`.
  void admit(std::chrono::milliseconds timeout);
  // Why the server refused joiners since this client joined (the last 64),
  // as "host: reason"; each is also logged (warn). Thread-safe.
  std::vector<std::string> refused_joins() const;
  // Clean goodbye: the others see left_cleanly = true. Idempotent; later
  // calls other than leave() throw.
  void leave();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace murmur::fabric::rendezvous
