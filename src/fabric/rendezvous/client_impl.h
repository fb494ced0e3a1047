// Client::Impl, shared by client.cc (calls, callbacks, leave) and
// client_failover.cc (connecting, Hello, the read loop, heartbeats and
// failover to a standby). Internal.
//
// Threads: members marked "io thread" are touched only there; the rest is
// guarded by mutex_.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/connection.h"
#include "fabric/rendezvous/wire.h"

namespace murmur::fabric::rendezvous {

using Clock = std::chrono::steady_clock;

class Client::Impl {
 public:
  // How many of its last set() keys a client sets again after a failover.
  static constexpr std::size_t kRecentSets = 1024;

  explicit Impl(ClientOptions options);
  ~Impl();

  // Sends `q` and waits up to `wait_for` for its answer; FabricError on an
  // error answer, a lost connection or the wait running out. `server_timeout`:
  // the server-side timeout of wait/gather/barrier, shortened when the call is
  // re-issued after a failover.
  wire::Response call(wire::Request q, Clock::duration wait_for, const std::string& what);
  SuspectVerdict suspect(int rank, Evidence evidence, const std::string& reason);
  void remember_set(const std::string& key, const std::string& value);
  // Drops the remembered sets under `prefix` (a gather retired them).
  void forget_sets_under(const std::string& prefix);
  void on_member_lost(std::function<void(const MemberLost&)> callback);
  void on_view(std::function<void(const View&, const std::vector<MemberLost>&)> callback);
  View view() const;
  std::string local_address() const {
    std::lock_guard lock(mutex_);
    return local_address_;
  }
  void set_standbys(std::vector<std::pair<int, Endpoint>> standbys);
  void leave();
  const ClientOptions& options() const { return options_; }
  // Lock-free: me() uses it, also with mutex_ held.
  int rank() const { return rank_.load(); }
  std::vector<std::string> refused_joins() const {
    std::lock_guard lock(mutex_);
    return refused_joins_;
  }

 private:
  // One request waiting for its answer.
  struct Call {
    bool done = false;
    wire::Response response;
    std::exception_ptr error;
    wire::Request request;
    std::optional<Clock::time_point> server_deadline;  // wait, gather, barrier
    std::uint64_t sent_on = 0;                         // connection epoch it was last sent on
  };
  enum class State { connecting, ready, failed };

  // client_failover.cc
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<std::shared_ptr<Connection>> open(Endpoint where, Clock::time_point deadline, bool retry);
  // Says Hello on `conn` and reads the Welcome; FabricError on refusal or
  // no answer by `deadline`.
  boost::asio::awaitable<wire::Welcome> say_hello(std::shared_ptr<Connection> conn, wire::Hello hello,
                                                  Clock::time_point deadline, const std::string& where);
  // Reads until the connection ends; returns why it ended.
  boost::asio::awaitable<std::string> read_loop(std::shared_ptr<Connection> conn);
  boost::asio::awaitable<void> heartbeats(std::shared_ptr<Connection> conn);
  // Reconnects to a standby; false when none accepted.
  boost::asio::awaitable<bool> fail_over(const std::string& reason);
  wire::Hello hello(bool rejoin) const;
  void use_connection(std::shared_ptr<Connection> conn, const Endpoint& where);
  void resend_after_failover();
  void dispatch(wire::ServerMessage message);
  void take_view(wire::ViewChanged changed);
  void note_refused_join(const wire::JoinRefused& refused);

  // client.cc
  void send_call(std::uint64_t id);
  wire::Request to_send(Call& call) const;
  void connection_lost(const std::string& reason);
  void fail_connect(std::exception_ptr error);
  void notify(const MemberLost& lost);
  void stop_io();
  std::string me() const { return "rendezvous client rank " + std::to_string(rank()); }
  Clock::duration heartbeat_stale() const {
    return options_.heartbeat_stale.count() > 0 ? Clock::duration(options_.heartbeat_stale)
                                                : Clock::duration(options_.heartbeat_interval * 6);
  }

  ClientOptions options_;
  boost::asio::io_context io_;  // first: destroyed last
  boost::asio::steady_timer heartbeat_timer_;
  std::shared_ptr<Connection> conn_;  // io thread
  std::uint64_t epoch_ = 1;           // io thread: one more per connection
  Clock::time_point last_heard_;      // io thread: anything from the server
  std::string stale_reason_;          // io thread: why heartbeats() closed the connection
  Endpoint server_endpoint_;          // io thread: where the server in use listens

  // Lock order: mutex_ is a leaf; it is never held while calling a
  // callback, sending, or waiting on the io thread.
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  State state_ = State::connecting;
  std::string server_;         // "host:port" of the server in use
  std::string local_address_;  // conn_'s local IP (mutex_)
  std::exception_ptr broken_;  // why connecting failed or the connection was lost
  bool leaving_ = false;       // the connection's end is expected: stay quiet
  bool left_ = false;          // no more calls
  std::uint64_t next_id_ = 1;  // 0 is "no answer wanted"
  std::map<std::uint64_t, std::shared_ptr<Call>> pending_;
  std::function<void(const MemberLost&)> callback_;
  std::function<void(const View&, const std::vector<MemberLost>&)> view_callback_;
  View view_;
  bool view_known_ = false;
  std::atomic<int> rank_{-1};  // options_.rank, or the id assigned to a joiner (set once, on the io thread)
  int world_size_ = 0;         // options_.size, or the job's as the server told a joiner
  std::vector<std::string> refused_joins_;  // the last 64
  bool expelled_ = false;                   // a view without this rank arrived: never fail over
  std::vector<std::pair<int, Endpoint>> standbys_;
  std::deque<std::pair<std::string, std::string>> recent_sets_;  // oldest first, at most kRecentSets

  std::thread thread_;  // last: started once everything above exists
};

}  // namespace murmur::fabric::rendezvous
