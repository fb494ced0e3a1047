#include "fabric/rendezvous/server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/connection.h"
#include "fabric/rendezvous/session.h"
#include "fabric/rendezvous/wire.h"

namespace murmur::fabric::rendezvous {
namespace asio = boost::asio;
using asio::ip::tcp;
using SessionPtr = std::shared_ptr<Session>;
using TimerPtr = std::shared_ptr<asio::steady_timer>;

namespace {

// Compares without an early exit, so response time does not leak how much of
// the token matched.
bool same_token(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

wire::Response error_response(std::uint64_t id, std::string text) {
  wire::Response r;
  r.id = id;
  r.kind = wire::Response::Kind::error;
  r.text = std::move(text);
  return r;
}

}  // namespace

class Server::Impl {
 public:
  explicit Impl(ServerOptions options);
  ~Impl();

  std::uint16_t port() const { return port_; }
  std::size_t rejected_count() const { return rejected_.load(); }
  std::size_t member_count() const { return member_count_.load(); }

 private:
  // A client blocked in wait(key) or barrier(name), answered later.
  struct Pending {
    SessionPtr session;
    std::uint64_t id;
    TimerPtr timer;
  };

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve(SessionPtr s);
  asio::awaitable<void> watch(SessionPtr s);

  // Returns false when the connection is finished with.
  bool handle(const SessionPtr& s, const wire::Hello& hello);
  bool handle(const SessionPtr& s, const wire::Request& request);
  void do_set(const SessionPtr& s, const wire::Request& q);
  void do_wait(const SessionPtr& s, const wire::Request& q);
  void do_barrier(const SessionPtr& s, const wire::Request& q);
  void do_gather(const SessionPtr& s, const wire::Request& q);
  // The values of prefix + "0" .. prefix + (count - 1); nullopt while one
  // is missing.
  std::optional<std::vector<std::string>> gathered(const std::string& prefix, std::uint32_t count) const;
  // Answers the gathers that `key` completes.
  void complete_gathers(const std::string& key);
  void send_values(const SessionPtr& s, std::uint64_t id, std::vector<std::string> values);
  void members_response(const SessionPtr& s, std::uint64_t id);

  void send(const SessionPtr& s, wire::ServerMessage message) { s->conn->send(wire::encode(message)); }
  // Protocol violation: counts, logs, closes (and loses the member if joined).
  void reject(const SessionPtr& s, const std::string& what);
  // Hello refused: counts, logs, tells the client why, closes.
  void refuse(const SessionPtr& s, const std::string& reason);
  // Removes a joined member, tells the others, fails what involved it.
  void lose(const SessionPtr& s, const std::string& reason, bool left_cleanly);
  void finish(const SessionPtr& s);
  TimerPtr arm(std::uint64_t timeout_ms, std::function<void()> on_expiry);

  ServerOptions options_;
  asio::io_context io_;  // first: destroyed last, after everything using it
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<std::size_t> rejected_{0};
  std::atomic<std::size_t> member_count_{0};  // members_.size(), for other threads

  // Io thread only from here on.
  std::set<SessionPtr> sessions_;      // every open connection
  std::map<int, SessionPtr> members_;  // rank -> joined session
  int world_size_ = 0;                 // fixed by the first Hello while anyone is joined
  std::map<std::string, std::string> store_;
  std::map<std::string, std::vector<Pending>> waiters_;  // key -> clients in wait()
  struct Gathering {
    Pending pending;
    std::uint32_t count;
  };
  std::map<std::string, std::vector<Gathering>> gathers_;   // prefix -> clients in gather()
  std::map<std::string, std::map<int, Pending>> barriers_;  // name -> rank -> arrival
  std::thread thread_;                                      // last: started once everything above exists
};

Server::Impl::Impl(ServerOptions options) : options_(std::move(options)), acceptor_(io_) {
  const std::string where = options_.bind_host + ":" + std::to_string(options_.port);
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(options_.bind_host, std::to_string(options_.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    throw FabricError("rendezvous server cannot bind " + where + ": cannot resolve host (" +
                      (ec ? ec.message() : "no address") + ")");
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  auto fail = [&](const char* call) {
    throw FabricError("rendezvous server cannot bind " + where + ": " + call + ": " + ec.message());
  };
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) fail("open");
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) fail("setsockopt(SO_REUSEADDR)");
  acceptor_.bind(endpoint, ec);
  if (ec) fail("bind");
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("listen");
  port_ = acceptor_.local_endpoint(ec).port();

  asio::co_spawn(io_, accept_loop(), asio::detached);
  thread_ = std::thread([this] { io_.run(); });
  rendezvous_log().info("rendezvous server listening on {}:{}", options_.bind_host, port_);
}

Server::Impl::~Impl() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (const auto& s : sessions_) {
      s->gone = true;
      s->conn->close();
      s->watchdog.cancel();
    }
  });
  // Stopping right after the post would race it; the post's closes end every
  // coroutine, but waiter timers keep the context busy, hence stop() after a
  // second, ordered post.
  asio::post(io_, [this] { io_.stop(); });
  if (thread_.joinable()) thread_.join();
  waiters_.clear();
  gathers_.clear();
  barriers_.clear();
  members_.clear();
  sessions_.clear();
}

asio::awaitable<void> Server::Impl::accept_loop() {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (!acceptor_.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors and the like: back off instead of spinning.
      rendezvous_log().warn("rendezvous server: accept failed: {}", ec.message());
      asio::steady_timer pause(io_, std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto s = std::make_shared<Session>(std::make_shared<Connection>(std::move(socket)));
    sessions_.insert(s);
    asio::co_spawn(io_, serve(s), asio::detached);
    asio::co_spawn(io_, watch(s), asio::detached);
  }
}

asio::awaitable<void> Server::Impl::serve(SessionPtr s) {
  try {
    while (!s->gone) {
      auto body = co_await s->conn->read_frame(options_.max_message_bytes);
      if (s->gone) break;
      if (!body) {
        if (s->joined) lose(s, "connection closed", false);
        break;
      }
      wire::ClientMessage message;
      try {
        message = wire::decode_client(*body, options_.max_message_bytes);
      } catch (const wire::DecodeError& e) {
        reject(s, e.what());
        break;
      }
      s->last_seen = Session::Clock::now();
      const bool more = std::visit([&](const auto& m) { return handle(s, m); }, message);
      if (!more) break;
    }
  } catch (const FrameError& e) {
    if (!s->gone) reject(s, e.what());
  } catch (const boost::system::system_error& e) {
    if (!s->gone && s->joined) lose(s, "connection closed (" + e.code().message() + ")", false);
  } catch (const std::exception& e) {
    // A bug, not the peer's fault; still, one connection must not stop the server.
    rendezvous_log().error("rendezvous server: dropping {}: {}", s->who(), e.what());
    if (!s->gone && s->joined) lose(s, std::string("server error: ") + e.what(), false);
  }
  finish(s);
}

asio::awaitable<void> Server::Impl::watch(SessionPtr s) {
  while (!s->gone && s->conn->is_open()) {
    const auto limit = s->joined ? options_.heartbeat_timeout : options_.hello_timeout;
    const auto deadline = s->last_seen + limit;
    if (Session::Clock::now() >= deadline) {
      if (s->joined) {
        lose(s, "no heartbeat for " + std::to_string(options_.heartbeat_timeout.count()) + " ms", false);
      } else {
        reject(s, "no Hello within " + std::to_string(options_.hello_timeout.count()) + " ms");
      }
      finish(s);
      co_return;
    }
    s->watchdog.expires_at(deadline);
    boost::system::error_code ec;
    co_await s->watchdog.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void Server::Impl::finish(const SessionPtr& s) {
  s->gone = true;
  s->conn->close_after_flush();
  s->watchdog.cancel();
  sessions_.erase(s);
}

bool Server::Impl::handle(const SessionPtr& s, const wire::Hello& hello) {
  if (s->joined) {
    reject(s, "second Hello on one connection");
    return false;
  }
  const auto refuse_with = [&](const std::string& reason) {
    refuse(s, reason);
    return false;
  };
  if (hello.version != wire::kProtocolVersion) {
    return refuse_with("protocol version " + std::to_string(hello.version) + " differs from the server's " +
                       std::to_string(wire::kProtocolVersion));
  }
  if (!same_token(hello.token, options_.token)) return refuse_with("cluster token mismatch");
  if (hello.size <= 0 || hello.rank < 0 || hello.rank >= hello.size) {
    return refuse_with("rank " + std::to_string(hello.rank) + " out of range for world size " +
                       std::to_string(hello.size));
  }
  if (world_size_ != 0 && hello.size != world_size_) {
    return refuse_with("world size " + std::to_string(hello.size) + " differs from " + std::to_string(world_size_));
  }
  if (auto it = members_.find(hello.rank); it != members_.end()) {
    return refuse_with("rank " + std::to_string(hello.rank) + " already joined from host " + it->second->host);
  }
  s->joined = true;
  s->rank = hello.rank;
  s->host = hello.host;
  members_[hello.rank] = s;
  member_count_ = members_.size();
  world_size_ = hello.size;
  s->watchdog.cancel();  // re-arm with the heartbeat timeout
  send(s, wire::Welcome{});
  rendezvous_log().info("rendezvous server: rank {} joined from {} ({} of {})", s->rank, s->who(), members_.size(),
                        world_size_);
  return true;
}

bool Server::Impl::handle(const SessionPtr& s, const wire::Request& q) {
  if (!s->joined) {
    reject(s, std::string("'") + wire::op_name(q.op) + "' request before Hello");
    return false;
  }
  switch (q.op) {
    case wire::Op::set:
      do_set(s, q);
      break;
    case wire::Op::get: {
      wire::Response r;
      r.id = q.id;
      if (auto it = store_.find(q.key); it != store_.end()) {
        r.kind = wire::Response::Kind::value;
        r.text = it->second;
      } else {
        r.kind = wire::Response::Kind::not_found;
      }
      send(s, r);
      break;
    }
    case wire::Op::wait:
      do_wait(s, q);
      break;
    case wire::Op::barrier:
      do_barrier(s, q);
      break;
    case wire::Op::gather:
      do_gather(s, q);
      break;
    case wire::Op::members:
      members_response(s, q.id);
      break;
    case wire::Op::heartbeat:
      break;  // last_seen is already updated
    case wire::Op::leave: {
      wire::Response ok;
      ok.id = q.id;
      send(s, ok);
      lose(s, "left", true);
      return false;
    }
  }
  return true;
}

TimerPtr Server::Impl::arm(std::uint64_t timeout_ms, std::function<void()> on_expiry) {
  auto timer = std::make_shared<asio::steady_timer>(io_);
  // Clamp: a client asking for "forever" must not overflow the clock.
  timer->expires_after(std::chrono::milliseconds(std::min<std::uint64_t>(timeout_ms, 1ull << 40)));
  timer->async_wait([on_expiry = std::move(on_expiry)](const boost::system::error_code& ec) {
    if (!ec) on_expiry();
  });
  return timer;
}

void Server::Impl::do_set(const SessionPtr& s, const wire::Request& q) {
  store_[q.key] = q.value;
  wire::Response ok;
  ok.id = q.id;
  send(s, ok);
  if (!gathers_.empty()) complete_gathers(q.key);
  auto it = waiters_.find(q.key);
  if (it == waiters_.end()) return;
  for (const Pending& p : it->second) {
    p.timer->cancel();
    wire::Response r;
    r.id = p.id;
    r.kind = wire::Response::Kind::value;
    r.text = q.value;
    send(p.session, r);
  }
  waiters_.erase(it);
}

std::optional<std::vector<std::string>> Server::Impl::gathered(const std::string& prefix, std::uint32_t count) const {
  std::vector<std::string> values;
  values.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    auto it = store_.find(prefix + std::to_string(i));
    if (it == store_.end()) return std::nullopt;
    values.push_back(it->second);
  }
  return values;
}

void Server::Impl::complete_gathers(const std::string& key) {
  for (auto it = gathers_.begin(); it != gathers_.end();) {
    if (key.compare(0, it->first.size(), it->first) != 0) {
      ++it;
      continue;
    }
    std::erase_if(it->second, [&](const Gathering& g) {
      auto values = gathered(it->first, g.count);
      if (!values) return false;
      g.pending.timer->cancel();
      send_values(g.pending.session, g.pending.id, std::move(*values));
      return true;
    });
    it = it->second.empty() ? gathers_.erase(it) : std::next(it);
  }
}

void Server::Impl::send_values(const SessionPtr& s, std::uint64_t id, std::vector<std::string> values) {
  wire::Response r;
  r.id = id;
  r.kind = wire::Response::Kind::values;
  r.values = std::move(values);
  send(s, r);
}

void Server::Impl::do_gather(const SessionPtr& s, const wire::Request& q) {
  // Bounded: one reply carries every value, and a count past the world
  // cannot be the one-key-per-rank collective this is for.
  if (q.count == 0 || q.count > static_cast<std::uint32_t>(std::max(world_size_, 1)) * 16) {
    send(s, error_response(q.id, "gather '" + q.key + "': count " + std::to_string(q.count) +
                                     " out of range for world size " + std::to_string(world_size_)));
    return;
  }
  if (auto values = gathered(q.key, q.count)) {
    send_values(s, q.id, std::move(*values));
    return;
  }
  auto timer = std::make_shared<TimerPtr>();
  *timer = arm(q.timeout_ms, [this, s, id = q.id, prefix = q.key, count = q.count, ms = q.timeout_ms, timer] {
    auto it = gathers_.find(prefix);
    if (it == gathers_.end()) return;  // answered just before the expiry ran
    const auto removed = std::erase_if(it->second, [&](const Gathering& g) { return g.pending.timer == *timer; });
    if (it->second.empty()) gathers_.erase(it);
    if (removed == 0) return;
    std::string missing;
    int listed = 0;
    for (std::uint32_t i = 0; i < count && listed < 16; ++i) {
      if (store_.count(prefix + std::to_string(i)) != 0) continue;
      missing += (missing.empty() ? "" : ", ") + std::to_string(i);
      ++listed;
    }
    send(s, error_response(id, "gather '" + prefix + "' (" + std::to_string(count) + " keys) timed out after " +
                                   std::to_string(ms) + " ms; still missing: " + missing));
  });
  gathers_[q.key].push_back(Gathering{Pending{s, q.id, *timer}, q.count});
}

void Server::Impl::do_wait(const SessionPtr& s, const wire::Request& q) {
  if (auto it = store_.find(q.key); it != store_.end()) {
    wire::Response r;
    r.id = q.id;
    r.kind = wire::Response::Kind::value;
    r.text = it->second;
    send(s, r);
    return;
  }
  auto timer = std::make_shared<TimerPtr>();
  *timer = arm(q.timeout_ms, [this, s, id = q.id, key = q.key, ms = q.timeout_ms, timer] {
    auto it = waiters_.find(key);
    if (it == waiters_.end()) return;  // answered just before the expiry ran
    const auto removed = std::erase_if(it->second, [&](const Pending& p) { return p.timer == *timer; });
    if (it->second.empty()) waiters_.erase(it);
    if (removed == 0) return;
    send(s, error_response(id, "timed out after " + std::to_string(ms) + " ms waiting for key '" + key + "'"));
  });
  waiters_[q.key].push_back(Pending{s, q.id, *timer});
}

void Server::Impl::do_barrier(const SessionPtr& s, const wire::Request& q) {
  auto& arrived = barriers_[q.key];
  if (arrived.count(s->rank) != 0) {
    send(s, error_response(q.id, "rank " + std::to_string(s->rank) + " is already waiting at barrier '" + q.key + "'"));
    return;
  }
  if (static_cast<int>(arrived.size()) + 1 == world_size_) {
    wire::Response ok;
    for (const auto& [rank, p] : arrived) {
      p.timer->cancel();
      ok.id = p.id;
      send(p.session, ok);
    }
    ok.id = q.id;
    send(s, ok);
    barriers_.erase(q.key);
    return;
  }
  const int rank = s->rank;
  auto timer = std::make_shared<TimerPtr>();
  *timer = arm(q.timeout_ms, [this, s, rank, id = q.id, name = q.key, ms = q.timeout_ms, timer] {
    // Its expiry may have been queued just before the barrier completed or
    // failed: act only if this very arrival is still waiting.
    auto it = barriers_.find(name);
    if (it == barriers_.end()) return;
    if (auto mine = it->second.find(rank); mine == it->second.end() || mine->second.timer != *timer) return;
    std::string missing;
    for (int r = 0; r < world_size_; ++r) {
      if (it->second.count(r) == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    it->second.erase(rank);
    if (it->second.empty()) barriers_.erase(it);
    send(s, error_response(id, "barrier '" + name + "' timed out after " + std::to_string(ms) +
                                   " ms; ranks still missing: " + missing));
  });
  arrived.emplace(rank, Pending{s, q.id, *timer});
}

void Server::Impl::members_response(const SessionPtr& s, std::uint64_t id) {
  wire::Response r;
  r.id = id;
  r.kind = wire::Response::Kind::members;
  for (const auto& [rank, m] : members_) r.members.push_back(Member{rank, m->host});
  send(s, r);
}

void Server::Impl::reject(const SessionPtr& s, const std::string& what) {
  ++rejected_;
  rendezvous_log().warn("rendezvous server: refusing {}: {}; closing the connection", s->who(), what);
  if (s->joined && !s->gone) lose(s, "protocol error: " + what, false);
  s->gone = true;
  s->conn->close();
}

void Server::Impl::refuse(const SessionPtr& s, const std::string& reason) {
  ++rejected_;
  rendezvous_log().warn("rendezvous server: refusing Hello from {}: {}", s->who(), reason);
  s->gone = true;
  send(s, wire::Welcome{false, reason});
  s->conn->close_after_flush();
}

void Server::Impl::lose(const SessionPtr& s, const std::string& reason, bool left_cleanly) {
  if (!s->joined || s->gone) return;
  s->gone = true;
  if (auto it = members_.find(s->rank); it != members_.end() && it->second == s) members_.erase(it);
  if (left_cleanly) {
    rendezvous_log().info("rendezvous server: {} left", s->who());
  } else {
    rendezvous_log().warn("rendezvous server: lost {}: {}", s->who(), reason);
  }
  const MemberLost lost{s->rank, s->host, reason, left_cleanly};
  for (const auto& [rank, m] : members_) send(m, lost);

  // Its own waits die with it.
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    std::erase_if(it->second, [&](const Pending& p) {
      if (p.session != s) return false;
      p.timer->cancel();
      return true;
    });
    it = it->second.empty() ? waiters_.erase(it) : std::next(it);
  }
  for (auto it = gathers_.begin(); it != gathers_.end();) {
    std::erase_if(it->second, [&](const Gathering& g) {
      if (g.pending.session != s) return false;
      g.pending.timer->cancel();
      return true;
    });
    it = it->second.empty() ? gathers_.erase(it) : std::next(it);
  }
  // No barrier can complete without it any more.
  const std::string why =
      "rank " + std::to_string(s->rank) + " (" + s->host + ") " + (left_cleanly ? "left" : "was lost: " + reason);
  for (auto& [name, arrived] : barriers_) {
    for (auto& [rank, p] : arrived) {
      p.timer->cancel();
      if (p.session != s) send(p.session, error_response(p.id, "barrier '" + name + "' failed: " + why));
    }
  }
  barriers_.clear();
  member_count_ = members_.size();
  if (members_.empty()) {
    // The job is over: its keys go with it, so that the next job on this
    // server does not read the last one's addresses.
    world_size_ = 0;
    store_.clear();
  }
  if (left_cleanly) {
    s->conn->close_after_flush();
  } else {
    s->conn->close();
  }
  s->watchdog.cancel();
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() = default;
std::uint16_t Server::port() const { return impl_->port(); }
std::size_t Server::rejected_count() const { return impl_->rejected_count(); }
std::size_t Server::member_count() const { return impl_->member_count(); }

}  // namespace murmur::fabric::rendezvous
