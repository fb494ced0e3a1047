#include "fabric/rendezvous/client.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/connection.h"
#include "fabric/rendezvous/wire.h"

namespace murmur::fabric::rendezvous {
namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

class Client::Impl {
 public:
  explicit Impl(ClientOptions options);
  ~Impl();

  wire::Response call(wire::Request q, Clock::duration wait_for, const std::string& what);
  void on_member_lost(std::function<void(const MemberLost&)> callback);
  void leave();
  const ClientOptions& options() const { return options_; }

 private:
  // One request waiting for its answer.
  struct Call {
    bool done = false;
    wire::Response response;
    std::exception_ptr error;
  };
  enum class State { connecting, ready, failed };

  asio::awaitable<void> run();
  asio::awaitable<void> heartbeats();
  asio::awaitable<void> connect(Clock::time_point deadline);
  void dispatch(wire::ServerMessage message);
  void connection_lost(const std::string& reason);
  void fail_connect(std::exception_ptr error);
  void notify(const MemberLost& lost);
  void stop_io();
  std::string server() const { return options_.server_host + ":" + std::to_string(options_.server_port); }
  std::string me() const { return "rendezvous client rank " + std::to_string(options_.rank); }

  ClientOptions options_;
  asio::io_context io_;  // first: destroyed last
  asio::steady_timer heartbeat_timer_;
  std::shared_ptr<Connection> conn_;  // io thread only

  // Lock order: mutex_ is a leaf; it is never held while calling the
  // callback, sending, or waiting on the io thread.
  std::mutex mutex_;
  std::condition_variable cv_;
  State state_ = State::connecting;
  std::exception_ptr broken_;  // why connecting failed or the connection was lost
  bool leaving_ = false;       // the connection's end is expected: stay quiet
  bool left_ = false;          // no more calls
  std::uint64_t next_id_ = 1;  // 0 is "no answer wanted"
  std::map<std::uint64_t, std::shared_ptr<Call>> pending_;
  std::function<void(const MemberLost&)> callback_;

  std::thread thread_;  // last: started once everything above exists
};

Client::Impl::Impl(ClientOptions options) : options_(std::move(options)), heartbeat_timer_(io_) {
  asio::co_spawn(io_, run(), asio::detached);
  thread_ = std::thread([this] { io_.run(); });

  std::unique_lock lock(mutex_);
  // run() gives up by itself at connect_timeout; the margin only guards
  // against a bug there.
  const auto backstop = Clock::now() + options_.connect_timeout + std::chrono::seconds(5);
  cv_.wait_until(lock, backstop, [this] { return state_ != State::connecting; });
  if (state_ == State::ready) return;
  std::exception_ptr error = broken_;
  lock.unlock();
  stop_io();
  if (error) std::rethrow_exception(error);
  throw FabricError(me() + ": no Hello answer from " + server() + " within " +
                    std::to_string(options_.connect_timeout.count()) + " ms");
}

Client::Impl::~Impl() {
  try {
    leave();
  } catch (const std::exception& e) {
    rendezvous_log().warn("{}: leave failed while closing: {}", me(), e.what());
  }
  stop_io();
}

void Client::Impl::stop_io() {
  if (!thread_.joinable()) return;
  asio::post(io_, [this] {
    heartbeat_timer_.cancel();
    if (conn_) conn_->close();
    io_.stop();
  });
  thread_.join();
}

asio::awaitable<void> Client::Impl::connect(Clock::time_point deadline) {
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto backoff = std::chrono::milliseconds(50);
  std::string last_error = "no attempt";
  for (;;) {
    auto endpoints = co_await resolver.async_resolve(options_.server_host, std::to_string(options_.server_port),
                                                     asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      tcp::socket socket(io_);
      co_await asio::async_connect(socket, endpoints, asio::redirect_error(asio::use_awaitable, ec));
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        conn_ = std::make_shared<Connection>(std::move(socket));
        co_return;
      }
    }
    last_error = ec.message();
    const auto now = Clock::now();
    if (now >= deadline) {
      throw FabricError(me() + ": cannot connect to rendezvous server " + server() + " within " +
                        std::to_string(options_.connect_timeout.count()) + " ms: " + last_error);
    }
    // The server may simply not be up yet: retry with a growing pause.
    asio::steady_timer pause(io_, std::min<Clock::duration>(backoff, deadline - now));
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

asio::awaitable<void> Client::Impl::run() {
  const auto deadline = Clock::now() + options_.connect_timeout;
  try {
    co_await connect(deadline);
    wire::Hello hello;
    hello.token = options_.token;
    hello.rank = options_.rank;
    hello.size = options_.size;
    hello.host = options_.self_host;
    conn_->send(wire::encode(hello));

    // A server that accepts but never answers must not hang us.
    asio::steady_timer hello_timer(io_, deadline);
    hello_timer.async_wait([conn = conn_](const boost::system::error_code& ec) {
      if (!ec) conn->close();
    });
    std::optional<std::vector<std::uint64_t>> body;
    try {
      body = co_await conn_->read_frame(options_.max_message_bytes);
    } catch (const boost::system::system_error&) {
      // handled below as "no answer"
    }
    hello_timer.cancel();
    if (!body) {
      throw FabricError(me() + ": rendezvous server " + server() + " closed the connection without answering Hello" +
                        (Clock::now() >= deadline ? " (timed out)" : ""));
    }
    const auto message = wire::decode_server(*body, options_.max_message_bytes);
    const auto* welcome = std::get_if<wire::Welcome>(&message);
    if (welcome == nullptr)
      throw FabricError(me() + ": rendezvous server " + server() + " answered Hello with something else");
    if (!welcome->ok) {
      throw FabricError("rendezvous server " + server() + " refused rank " + std::to_string(options_.rank) + ": " +
                        welcome->refused);
    }
  } catch (const std::exception& e) {
    fail_connect(std::current_exception());
    if (conn_) conn_->close();
    co_return;
  }
  {
    std::lock_guard lock(mutex_);
    state_ = State::ready;
  }
  cv_.notify_all();
  rendezvous_log().debug("{}: joined at {}", me(), server());
  asio::co_spawn(io_, heartbeats(), asio::detached);

  const auto conn = conn_;
  try {
    for (;;) {
      auto body = co_await conn->read_frame(options_.max_message_bytes);
      if (!body) {
        connection_lost("the server closed the connection");
        co_return;
      }
      dispatch(wire::decode_server(*body, options_.max_message_bytes));
    }
  } catch (const boost::system::system_error& e) {
    connection_lost(e.code().message());
  } catch (const std::exception& e) {
    connection_lost(std::string("bad message from the server: ") + e.what());
  }
}

asio::awaitable<void> Client::Impl::heartbeats() {
  const auto frame = wire::encode(wire::Request{});  // id 0, heartbeat
  for (;;) {
    heartbeat_timer_.expires_after(options_.heartbeat_interval);
    boost::system::error_code ec;
    co_await heartbeat_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !conn_->is_open()) co_return;
    conn_->send(frame);
  }
}

void Client::Impl::dispatch(wire::ServerMessage message) {
  if (auto* lost = std::get_if<MemberLost>(&message)) {
    notify(*lost);
    return;
  }
  if (auto* response = std::get_if<wire::Response>(&message)) {
    {
      std::lock_guard lock(mutex_);
      auto it = pending_.find(response->id);
      if (it == pending_.end()) return;  // its caller gave up already
      it->second->done = true;
      it->second->response = std::move(*response);
      pending_.erase(it);
    }
    cv_.notify_all();
  }
}

void Client::Impl::notify(const MemberLost& lost) {
  std::function<void(const MemberLost&)> callback;
  {
    std::lock_guard lock(mutex_);
    callback = callback_;
  }
  if (!callback) return;
  try {
    callback(lost);
  } catch (const std::exception& e) {
    rendezvous_log().error("{}: on_member_lost callback threw: {}", me(), e.what());
  }
}

void Client::Impl::fail_connect(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    broken_ = error;
    state_ = State::failed;
  }
  cv_.notify_all();
}

void Client::Impl::connection_lost(const std::string& reason) {
  heartbeat_timer_.cancel();
  if (conn_) conn_->close();
  bool quiet;
  {
    std::lock_guard lock(mutex_);
    quiet = leaving_;
    const std::string text = me() + ": connection to rendezvous server " + server() + " lost: " + reason;
    broken_ = std::make_exception_ptr(FabricError(text));
    for (auto& [id, call] : pending_) {
      call->done = true;
      call->error = broken_;
    }
    pending_.clear();
  }
  cv_.notify_all();
  if (quiet) return;
  rendezvous_log().warn("{}: connection to rendezvous server {} lost: {}", me(), server(), reason);
  notify(MemberLost{-1, server(), "connection to rendezvous server lost: " + reason, false});
}

wire::Response Client::Impl::call(wire::Request q, Clock::duration wait_for, const std::string& what) {
  auto call = std::make_shared<Call>();
  std::unique_lock lock(mutex_);
  if (left_) throw FabricError(me() + ": " + what + " after leave()");
  if (broken_) std::rethrow_exception(broken_);
  q.id = next_id_++;
  pending_[q.id] = call;
  asio::post(io_, [this, frame = wire::encode(q)]() mutable {
    if (conn_) conn_->send(std::move(frame));
  });
  if (!cv_.wait_until(lock, Clock::now() + wait_for, [&] { return call->done; })) {
    pending_.erase(q.id);
    throw FabricError(me() + ": " + what + ": no answer from rendezvous server " + server() + " within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait_for).count()) + " ms");
  }
  if (call->error) std::rethrow_exception(call->error);
  if (call->response.kind == wire::Response::Kind::error) {
    throw FabricError(me() + ": " + what + ": " + call->response.text);
  }
  return std::move(call->response);
}

void Client::Impl::on_member_lost(std::function<void(const MemberLost&)> callback) {
  std::lock_guard lock(mutex_);
  callback_ = std::move(callback);
}

void Client::Impl::leave() {
  {
    std::lock_guard lock(mutex_);
    if (left_ || leaving_) return;
    leaving_ = true;
    if (broken_) {
      left_ = true;
      return;
    }
  }
  wire::Request q;
  q.op = wire::Op::leave;
  try {
    // Short: leave() runs in the destructor, which must not hang on a stuck server.
    call(q, std::min<Clock::duration>(options_.request_timeout, std::chrono::seconds(5)), "leave");
  } catch (const FabricError& e) {
    // The server may already be gone; leaving is best effort then.
    rendezvous_log().debug("{}: leave: {}", me(), e.what());
  }
  {
    std::lock_guard lock(mutex_);
    left_ = true;
  }
  asio::post(io_, [this] {
    heartbeat_timer_.cancel();
    if (conn_) conn_->close_after_flush();
  });
}

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

void Client::set(const std::string& key, const std::string& value) {
  wire::Request q;
  q.op = wire::Op::set;
  q.key = key;
  q.value = value;
  impl_->call(std::move(q), impl_->options().request_timeout, "set '" + key + "'");
}

std::optional<std::string> Client::get(const std::string& key) {
  wire::Request q;
  q.op = wire::Op::get;
  q.key = key;
  auto r = impl_->call(std::move(q), impl_->options().request_timeout, "get '" + key + "'");
  if (r.kind == wire::Response::Kind::not_found) return std::nullopt;
  return std::move(r.text);
}

std::string Client::wait(const std::string& key, std::chrono::milliseconds timeout) {
  wire::Request q;
  q.op = wire::Op::wait;
  q.key = key;
  q.timeout_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(timeout.count(), 0));
  auto r = impl_->call(std::move(q), timeout + impl_->options().request_timeout, "wait for key '" + key + "'");
  return std::move(r.text);
}

std::vector<std::string> Client::gather(const std::string& prefix, std::uint32_t count,
                                        std::chrono::milliseconds timeout) {
  wire::Request q;
  q.op = wire::Op::gather;
  q.key = prefix;
  q.count = count;
  q.timeout_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(timeout.count(), 0));
  auto r = impl_->call(std::move(q), timeout + impl_->options().request_timeout, "gather '" + prefix + "'");
  if (r.values.size() != count) {
    throw FabricError("gather '" + prefix + "': the server answered " + std::to_string(r.values.size()) +
                      " values for " + std::to_string(count) + " keys");
  }
  return std::move(r.values);
}

void Client::barrier(const std::string& name, std::chrono::milliseconds timeout) {
  wire::Request q;
  q.op = wire::Op::barrier;
  q.key = name;
  q.timeout_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(timeout.count(), 0));
  impl_->call(std::move(q), timeout + impl_->options().request_timeout, "barrier '" + name + "'");
}

std::vector<Member> Client::members() {
  wire::Request q;
  q.op = wire::Op::members;
  return impl_->call(std::move(q), impl_->options().request_timeout, "members").members;
}

void Client::on_member_lost(std::function<void(const MemberLost&)> callback) {
  impl_->on_member_lost(std::move(callback));
}

void Client::leave() { impl_->leave(); }

}  // namespace murmur::fabric::rendezvous
