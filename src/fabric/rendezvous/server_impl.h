// Server::Impl, shared by server.cc (connections, key/value store, waits,
// gathers, barriers) and server_membership.cc (Hello, views, losses,
// suspicion, failover adoption). Internal.
//
// Threads: everything below `member_count_` runs on the io thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/once_per_source.h"
#include "fabric/rendezvous/server.h"
#include "fabric/rendezvous/session.h"
#include "fabric/rendezvous/wire.h"

namespace murmur::fabric::rendezvous {

inline std::string ms_text(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

using SessionPtr = std::shared_ptr<Session>;

// Member ids a Hello may name: bounded, so an untrusted id cannot inflate
// what others allocate per rank (a joiner's transport has id + 1 slots).
inline constexpr int kMaxMemberId = 1 << 20;
using TimerPtr = std::shared_ptr<boost::asio::steady_timer>;

wire::Response error_response(std::uint64_t id, std::string text);

class Server::Impl {
 public:
  explicit Impl(ServerOptions options);
  ~Impl();

  std::uint16_t port() const { return port_; }
  std::size_t rejected_count() const { return rejected_.load(); }
  std::size_t member_count() const { return member_count_.load(); }
  std::size_t store_bytes() const { return store_bytes_.load(); }
  std::optional<std::uint64_t> generation() const {
    const auto g = published_generation_.load();
    if (g < 0) return std::nullopt;
    return static_cast<std::uint64_t>(g);
  }

 private:
  // A client blocked in wait(key) or barrier(name), answered later.
  struct Pending {
    SessionPtr session;
    std::uint64_t id;
    TimerPtr timer;
  };

  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(SessionPtr s);
  boost::asio::awaitable<void> watch(SessionPtr s);

  // Returns false when the connection is finished with.
  bool handle(const SessionPtr& s, const wire::Hello& hello);
  bool handle(const SessionPtr& s, const wire::Request& request);
  void do_set(const SessionPtr& s, const wire::Request& q);
  void do_wait(const SessionPtr& s, const wire::Request& q);
  void do_barrier(const SessionPtr& s, const wire::Request& q);
  void do_gather(const SessionPtr& s, const wire::Request& q);
  void do_suspect(const SessionPtr& s, const wire::Request& q);
  // The values of prefix + "0" .. prefix + (count - 1); nullopt while one
  // is missing.
  std::optional<std::vector<std::string>> gathered(const std::string& prefix, std::uint32_t count) const;
  // Answers the gathers that `key` completes, then erases what they retire.
  void complete_gathers(const std::string& key);
  // Erases every key of the store that starts with `prefix` (none when empty).
  void erase_keys_under(const std::string& prefix);
  void send_values(const SessionPtr& s, std::uint64_t id, std::vector<std::string> values);
  void members_response(const SessionPtr& s, std::uint64_t id);

  void send(const SessionPtr& s, wire::ServerMessage message) { s->conn->send(wire::encode(message)); }
  // Protocol violation: counts, logs, closes (and loses the member if joined).
  void reject(const SessionPtr& s, const std::string& what);
  // Hello refused: counts, logs, tells the client why, closes.
  void refuse(const SessionPtr& s, const std::string& reason);
  // Removes a joined member, tells the others, fails what involved it.
  // `tell_it`: the lost member is sent the new view before its connection
  // closes, so that a stalled one learns it was expelled when it wakes.
  void lose(const SessionPtr& s, const std::string& reason, bool left_cleanly, bool tell_it = false);
  void drop_requests_of(const SessionPtr& s);
  void finish(const SessionPtr& s);
  // Past options_.max_connections_before_hello connections without an
  // accepted Hello, rejects the one silent longest.
  void drop_oldest_before_hello();
  TimerPtr arm(std::uint64_t timeout_ms, std::function<void()> on_expiry);

  // Views (server_membership.cc).
  // "" when `hello`'s rejoin view is well formed, else why not.
  std::string malformed_rejoin(const wire::Hello& hello) const;
  void admit(const SessionPtr& s, const wire::Hello& hello);
  // Joining a running job (server_join.cc).
  bool handle_join(const SessionPtr& s, const wire::Hello& hello);
  void do_admit(const SessionPtr& s, const wire::Request& q);
  // Admits waiting joiners in id order (server_join.cc, "Order").
  void admit_in_order();
  void admit_now(const SessionPtr& s, const wire::Request& q);
  // What a pending joiner may do: set keys of its own ("/<id>" last), get,
  // wait, admit, heartbeat, leave.
  bool allowed_before_admission(const SessionPtr& s, const wire::Request& q) const;
  void note_id(int rank) { next_id_ = std::max(next_id_, rank + 1); }
  // Takes a rejoining member's view if it is newer than ours.
  void adopt(const wire::Hello& hello);
  void on_grace_expired();
  // The view a quorum is counted in: the one the waiting losses were lost
  // from, or the current view when none waits.
  const std::map<int, std::string>& loss_base() const;
  // Whether the members that rejoined this standby may go on as the job.
  bool rejoined_a_quorum() const;
  // Removes `lost` from the view. Clean leaves, and losses while a quorum
  // is not required, publish the next generation at once; other losses
  // wait in unconfirmed_losses_ for a quorum (server_quorum.cc).
  void change_view(const std::vector<MemberLost>& lost);
  // Publishes the next generation without `lost` (and any unconfirmed).
  void publish_view_change(std::vector<MemberLost> lost);
  // Quorum (server_quorum.cc). Called whenever a member is heard from.
  void on_heard();
  // Publishes the unconfirmed losses if a quorum of quorum_base_ has been
  // heard since they began; returns whether it did.
  bool confirm_losses();
  // A rejoin from a member whose loss still waits for a quorum, naming the
  // view it was lost from: the loss is withdrawn and the member is back in
  // the view (nobody was told of it). Returns whether it was.
  bool withdraw_unconfirmed_loss(int rank, const std::string& host, std::uint64_t generation);
  void on_quorum_deadline();
  // Tells every member held here that it is out and ends the job here;
  // later rejoining or joining Hellos of that job are refused.
  void stand_down(const std::string& why);
  void push_view(const SessionPtr& s, const std::vector<MemberLost>& lost, const std::vector<int>& joined = {});
  wire::ViewChanged current_view(const std::vector<MemberLost>& lost, const std::vector<int>& joined = {}) const;
  void fail_barriers(const std::string& why);
  // How many arrivals complete a barrier: the view's members once it exists.
  std::size_t barrier_quorum() const;
  void end_job();

  ServerOptions options_;
  boost::asio::io_context io_;  // first: destroyed last, after everything using it
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<std::size_t> rejected_{0};
  OncePerSource logged_;                                // refusals of strangers logged so far
  std::atomic<std::size_t> member_count_{0};            // members_.size(), for other threads
  std::atomic<std::int64_t> published_generation_{-1};  // generation_, or -1 before the view

  // Io thread only from here on.
  std::set<SessionPtr> sessions_;      // every open connection
  std::map<int, SessionPtr> members_;  // rank -> joined session in the view
  int world_size_ = 0;                 // fixed by the first Hello while anyone is joined
  bool view_started_ = false;
  std::uint64_t generation_ = 0;
  std::map<int, std::string> view_;  // rank -> host of every live member of the view
  TimerPtr grace_timer_;             // armed by the first rejoin this server sees
  bool in_grace_ = false;            // grace_timer_ armed and not expired
  // Losses removed from view_ but not yet published: they wait until a
  // quorum of quorum_base_ (the view they were lost from, less members
  // that left cleanly since) is heard after losses_since_.
  std::vector<MemberLost> unconfirmed_losses_;
  std::map<int, std::string> quorum_base_;
  Session::Clock::time_point losses_since_;
  TimerPtr quorum_timer_;
  std::string stood_down_;  // why this server stood down; "" while it serves
  int next_id_ = 0;         // the id the next joiner gets: max id ever seen + 1
  // Joiners given an id and not admitted yet (live sessions), and the admit
  // requests among them that wait for a smaller id to go first.
  std::map<int, SessionPtr> pending_joiners_;
  std::map<int, wire::Request> waiting_admits_;
  std::string job_signature_;  // the first member's Hello's; "" while none said one
  std::map<std::string, std::string> store_;
  std::atomic<std::size_t> store_bytes_{0};              // keys and values in store_; read by any thread
  std::map<std::string, std::vector<Pending>> waiters_;  // key -> clients in wait()
  struct Gathering {
    Pending pending;
    std::uint32_t count;
    std::string retire;  // Request.gather.retire
  };
  std::map<std::string, std::vector<Gathering>> gathers_;   // prefix -> clients in gather()
  std::map<std::string, std::map<int, Pending>> barriers_;  // name -> rank -> arrival
  std::thread thread_;                                      // last: started once everything above exists
};

}  // namespace murmur::fabric::rendezvous
