#include "fabric/rendezvous/server.h"

#include "fabric/rendezvous/server_impl.h"

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

#include "common/background_thread.h"
#include "common/close_on_exec.h"
#include "common/job_token.h"
#include "common/log.h"
#include "common/once_per_source.h"
#include "common/trace.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/connection.h"
#include "fabric/rendezvous/session.h"
#include "fabric/rendezvous/wire.h"

namespace murmur::fabric::rendezvous {
namespace asio = boost::asio;
using asio::ip::tcp;

wire::Response error_response(std::uint64_t id, std::string text) {
  wire::Response r;
  r.id = id;
  r.kind = wire::Response::Kind::error;
  r.text = std::move(text);
  return r;
}

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
  set_close_on_exec(acceptor_.native_handle());
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) fail("setsockopt(SO_REUSEADDR)");
  acceptor_.bind(endpoint, ec);
  if (ec) fail("bind");
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("listen");
  port_ = acceptor_.local_endpoint(ec).port();

  asio::co_spawn(io_, accept_loop(), asio::detached);
  thread_ = start_background_thread([this] {
    trace::name_thread("rendezvous server");
    io_.run();
  });
  rendezvous_log().info("rendezvous server listening on {}:{}", options_.bind_host, port_);
  if (options_.job_token.empty()) job_token::note_unauthenticated("rendezvous", "the rendezvous server");
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
    drop_oldest_before_hello();
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
      if (s->member) on_heard();
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
  auto due = Session::Clock::now();  // when this check was meant to run
  while (!s->gone && s->conn->is_open()) {
    const auto limit = s->joined ? options_.heartbeat_timeout : options_.hello_timeout;
    const auto deadline = s->last_seen + limit;
    const auto now = Session::Clock::now();
    if (now >= deadline && now - due > limit / 4) {
      // Run well after it was due: this server (its process, or the whole
      // host) did not run for a while, so the member's frames may be waiting
      // unread in its socket, and the read loop runs after this handler. It
      // gets a quarter of the limit before the member is judged: a stall of
      // the server's host must not read as every member's silence (the
      // soak's lost jobs, docs/testing.md; the client does the same).
      due = now + limit / 4;
      s->watchdog.expires_at(due);
      boost::system::error_code ec;
      co_await s->watchdog.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (now >= deadline) {
      if (s->joined) {
        // Told before its connection closes: a stopped process reads, when it
        // wakes, that it is out, instead of failing over (client_failover.cc).
        lose(s, "no heartbeat for " + std::to_string(options_.heartbeat_timeout.count()) + " ms", false,
             /*tell_it=*/true);
      } else {
        reject(s, "no Hello within " + std::to_string(options_.hello_timeout.count()) + " ms");
      }
      finish(s);
      co_return;
    }
    due = deadline;
    s->watchdog.expires_at(deadline);
    boost::system::error_code ec;
    co_await s->watchdog.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void Server::Impl::drop_oldest_before_hello() {
  std::size_t waiting = 0;
  SessionPtr oldest;
  for (const auto& s : sessions_) {
    if (s->joined || s->gone) continue;
    ++waiting;
    if (!oldest || s->last_seen < oldest->last_seen) oldest = s;
  }
  if (waiting <= options_.max_connections_before_hello) return;
  // The newest is left alone: a member says Hello at once, so whoever has
  // waited longest is the least likely to be one.
  reject(oldest, "more than " + std::to_string(options_.max_connections_before_hello) +
                     " connections without a Hello; dropping the one silent longest");
  finish(oldest);
}

void Server::Impl::finish(const SessionPtr& s) {
  s->gone = true;
  s->conn->close_after_flush();
  s->watchdog.cancel();
  sessions_.erase(s);
}

bool Server::Impl::handle(const SessionPtr& s, const wire::Request& q) {
  if (!s->joined) {
    reject(s, std::string("'") + wire::op_name(q.op) + "' request before Hello");
    return false;
  }
  if (s->pending_join) {
    if (!allowed_before_admission(s, q)) {
      send(s, error_response(q.id, std::string("rank ") + std::to_string(s->rank) +
                                       " is a pending joiner, not a member yet: '" + wire::op_name(q.op) +
                                       (q.op == wire::Op::set ? " " + q.key : std::string()) +
                                       "' is refused until it is admitted"));
      return true;
    }
  } else if (q.op == wire::Op::admit) {
    send(s, error_response(q.id, "rank " + std::to_string(s->rank) + " asked to be admitted but is not a joiner"));
    return true;
  }
  const bool member_only = q.op != wire::Op::heartbeat && q.op != wire::Op::suspect && q.op != wire::Op::leave;
  if (!s->member && !s->pending_join && member_only) {
    // A rank expelled from the view: it may learn so, not act on the job.
    send(s, error_response(q.id, "rank " + std::to_string(s->rank) + " is not a member of view " +
                                     std::to_string(generation_) + " (it was declared lost)"));
    return true;
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
      // last_seen is already updated; echoed so the client can tell a
      // server that accepts but no longer serves.
      if (q.id != 0) {
        wire::Response echo;
        echo.id = q.id;
        send(s, echo);
      }
      break;
    case wire::Op::suspect:
      do_suspect(s, q);
      break;
    case wire::Op::admit:
      do_admit(s, q);
      break;
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
  // Bounded: each frame is, but a member could otherwise set keys until the
  // server runs out of memory.
  const auto old = store_.find(q.key);
  const std::size_t freed = old == store_.end() ? 0 : old->first.size() + old->second.size();
  const std::size_t after = store_bytes_ - freed + q.key.size() + q.value.size();
  if (after > options_.max_store_bytes) {
    send(s, error_response(q.id, "set '" + q.key + "': the key/value store would hold " + std::to_string(after) +
                                     " bytes, above its limit of " + std::to_string(options_.max_store_bytes) +
                                     " (ServerOptions::max_store_bytes)"));
    return;
  }
  store_bytes_ = after;
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
  // Retired after the loop: a retire must not take keys from under a
  // gather answered later in it.
  std::vector<std::string> retired;
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
      if (!g.retire.empty()) retired.push_back(g.retire);
      return true;
    });
    it = it->second.empty() ? gathers_.erase(it) : std::next(it);
  }
  for (const auto& prefix : retired) erase_keys_under(prefix);
}

void Server::Impl::erase_keys_under(const std::string& prefix) {
  if (prefix.empty()) return;
  // The store is ordered: the keys under a prefix are one run from its
  // lower bound.
  for (auto it = store_.lower_bound(prefix); it != store_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    store_bytes_ -= it->first.size() + it->second.size();
    it = store_.erase(it);
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
  if (q.count == 0 || q.count > static_cast<std::uint32_t>(std::max({world_size_, next_id_, 1})) * 16) {
    send(s, error_response(q.id, "gather '" + q.key + "': count " + std::to_string(q.count) +
                                     " out of range for world size " + std::to_string(world_size_)));
    return;
  }
  // A retire covering the gather's own keys would erase what the other
  // members are about to read.
  if (!q.retire.empty() && q.key.compare(0, q.retire.size(), q.retire) == 0) {
    send(s, error_response(
                q.id, "gather '" + q.key + "': its retire prefix '" + q.retire + "' covers the gather's own keys"));
    return;
  }
  if (auto values = gathered(q.key, q.count)) {
    send_values(s, q.id, std::move(*values));
    erase_keys_under(q.retire);
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
  gathers_[q.key].push_back(Gathering{Pending{s, q.id, *timer}, q.count, q.retire});
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
  if (arrived.size() + 1 >= barrier_quorum()) {
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
    // The first few missing ranks, then how many: the list is for a person.
    constexpr int kListed = 16;
    std::string missing;
    int listed = 0, unlisted = 0;
    std::vector<int> expected;
    if (view_started_) {
      for (const auto& [r, host] : view_) expected.push_back(r);
    } else {
      for (int r = 0; r < world_size_; ++r) expected.push_back(r);
    }
    for (int r : expected) {
      if (it->second.count(r) != 0) continue;
      if (listed++ < kListed)
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      else
        ++unlisted;
    }
    if (unlisted > 0) missing += " and " + std::to_string(unlisted) + " more";
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
  // A member's line always; strangers' once per address (see refuse).
  const bool log = s->joined || logged_.first(OncePerSource::address_of(s->conn->remote()));
  (log ? rendezvous_log().warn("rendezvous server: refusing {}: {}; closing the connection{}", s->who(), what,
                               s->joined ? "" : " (more from this address are counted, not logged)")
       : rendezvous_log().debug("rendezvous server: refusing {}: {}", s->who(), what));
  if (s->joined && !s->gone) lose(s, "protocol error: " + what, false);
  s->gone = true;
  s->conn->close();
}

void Server::Impl::refuse(const SessionPtr& s, const std::string& reason) {
  ++rejected_;
  // Once per address and reason: a flood of forged Hellos logs one line,
  // and a member refused for another reason from the same host still shows.
  const std::string key = std::string(OncePerSource::address_of(s->conn->remote())) + " " + reason;
  (logged_.first(key) ? rendezvous_log().warn("rendezvous server: refusing Hello from {}: {}", s->who(), reason)
                      : rendezvous_log().debug("rendezvous server: refusing Hello from {}: {}", s->who(), reason));
  s->gone = true;
  send(s, wire::Welcome{false, reason});
  s->conn->close_after_flush();
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() = default;
std::uint16_t Server::port() const { return impl_->port(); }
std::size_t Server::rejected_count() const { return impl_->rejected_count(); }
std::size_t Server::member_count() const { return impl_->member_count(); }
std::optional<std::uint64_t> Server::generation() const { return impl_->generation(); }
std::size_t Server::store_bytes() const { return impl_->store_bytes(); }

}  // namespace murmur::fabric::rendezvous
