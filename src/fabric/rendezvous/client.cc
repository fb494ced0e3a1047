#include "fabric/rendezvous/client.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

#include "common/background_thread.h"
#include "common/log.h"
#include "common/trace.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/client_impl.h"

namespace murmur::fabric::rendezvous {
namespace asio = boost::asio;

const char* verdict_name(SuspectVerdict verdict) {
  switch (verdict) {
    case SuspectVerdict::kDeclared:
      return "declared";
    case SuspectVerdict::kAlreadyLost:
      return "already lost";
    case SuspectVerdict::kAlive:
      return "alive";
    case SuspectVerdict::kNotMember:
      return "not a member";
    case SuspectVerdict::kUnreachable:
      return "unreachable";
  }
  return "?";
}

Client::Impl::Impl(ClientOptions options)
    : options_(std::move(options)),
      heartbeat_timer_(io_),
      rank_(options_.join ? -1 : options_.rank),
      world_size_(options_.size) {
  server_ = options_.server_host + ":" + std::to_string(options_.server_port);
  asio::co_spawn(io_, run(), asio::detached);
  thread_ = start_background_thread([this] {
    trace::name_thread("rendezvous client");
    io_.run();
  });

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
  throw FabricError(me() + ": no Hello answer from " + server_ + " within " +
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
  std::string server;
  {
    std::lock_guard lock(mutex_);
    quiet = leaving_;
    server = server_;
    const std::string text = me() + ": connection to rendezvous server " + server + " lost: " + reason;
    broken_ = std::make_exception_ptr(FabricError(text));
    for (auto& [id, call] : pending_) {
      call->done = true;
      call->error = broken_;
    }
    pending_.clear();
  }
  cv_.notify_all();
  if (quiet) return;
  rendezvous_log().warn("{}: connection to rendezvous server {} lost: {}", me(), server, reason);
  notify(MemberLost{-1, server, "connection to rendezvous server lost: " + reason, false});
}

wire::Request Client::Impl::to_send(Call& call) const {
  wire::Request q = call.request;
  if (call.server_deadline) {
    // Re-issued after a failover: the new server waits only what is left.
    const auto left = std::max<Clock::duration>(*call.server_deadline - Clock::now(), Clock::duration::zero());
    q.timeout_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(left).count());
  }
  return q;
}

void Client::Impl::send_call(std::uint64_t id) {
  std::vector<std::byte> frame;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    // Answered, given up, or already sent on this connection by a failover.
    if (it == pending_.end() || it->second->sent_on == epoch_) return;
    it->second->sent_on = epoch_;
    frame = wire::encode(to_send(*it->second));
  }
  if (conn_) conn_->send(std::move(frame));
}

wire::Response Client::Impl::call(wire::Request q, Clock::duration wait_for, const std::string& what) {
  auto call = std::make_shared<Call>();
  std::unique_lock lock(mutex_);
  if (left_) throw FabricError(me() + ": " + what + " after leave()");
  if (broken_) std::rethrow_exception(broken_);
  q.id = next_id_++;
  const bool server_waits = q.op == wire::Op::wait || q.op == wire::Op::gather || q.op == wire::Op::barrier;
  if (server_waits) call->server_deadline = Clock::now() + std::chrono::milliseconds(q.timeout_ms);
  call->request = q;
  pending_[q.id] = call;
  asio::post(io_, [this, id = q.id] { send_call(id); });
  if (!cv_.wait_until(lock, Clock::now() + wait_for, [&] { return call->done; })) {
    pending_.erase(q.id);
    throw FabricError(me() + ": " + what + ": no answer from rendezvous server " + server_ + " within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait_for).count()) + " ms");
  }
  if (call->error) std::rethrow_exception(call->error);
  if (call->response.kind == wire::Response::Kind::error) {
    throw FabricError(me() + ": " + what + ": " + call->response.text);
  }
  return std::move(call->response);
}

SuspectVerdict Client::Impl::suspect(int rank, Evidence evidence, const std::string& reason) {
  wire::Request q;
  q.op = wire::Op::suspect;
  q.rank = rank;
  q.evidence = evidence;
  q.key = reason;
  try {
    auto r = call(std::move(q), options_.suspect_timeout, "suspect rank " + std::to_string(rank));
    if (r.kind == wire::Response::Kind::verdict && r.verdict != SuspectVerdict::kUnreachable) return r.verdict;
    rendezvous_log().warn("{}: suspect rank {}: the server answered something other than a verdict", me(), rank);
  } catch (const FabricError& e) {
    rendezvous_log().warn("{}: suspect rank {}: {}", me(), rank, e.what());
  }
  std::lock_guard lock(mutex_);
  return expelled_ ? SuspectVerdict::kNotMember : SuspectVerdict::kUnreachable;
}

void Client::Impl::remember_set(const std::string& key, const std::string& value) {
  std::lock_guard lock(mutex_);
  recent_sets_.emplace_back(key, value);
  if (recent_sets_.size() > kRecentSets) recent_sets_.pop_front();
}

void Client::Impl::forget_sets_under(const std::string& prefix) {
  if (prefix.empty()) return;
  std::lock_guard lock(mutex_);
  std::erase_if(recent_sets_, [&](const auto& kv) { return kv.first.compare(0, prefix.size(), prefix) == 0; });
}

void Client::Impl::on_member_lost(std::function<void(const MemberLost&)> callback) {
  std::lock_guard lock(mutex_);
  callback_ = std::move(callback);
}

void Client::Impl::on_view(std::function<void(const View&, const std::vector<MemberLost>&)> callback) {
  std::lock_guard lock(mutex_);
  view_callback_ = std::move(callback);
}

View Client::Impl::view() const {
  std::lock_guard lock(mutex_);
  return view_;
}

void Client::Impl::set_standbys(std::vector<std::pair<int, Endpoint>> standbys) {
  std::sort(standbys.begin(), standbys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::lock_guard lock(mutex_);
  standbys_ = std::move(standbys);
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

void Client::Impl::note_refused_join(const wire::JoinRefused& refused) {
  rendezvous_log().warn("{}: the rendezvous server refused a joiner from host {}: {}", me(), refused.host,
                        refused.reason);
  std::lock_guard lock(mutex_);
  refused_joins_.push_back(refused.host + ": " + refused.reason);
  if (refused_joins_.size() > 64) refused_joins_.erase(refused_joins_.begin());
}

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

void Client::set(const std::string& key, const std::string& value) {
  impl_->remember_set(key, value);
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
                                        std::chrono::milliseconds timeout, const std::string& retire) {
  wire::Request q;
  q.op = wire::Op::gather;
  q.key = prefix;
  q.count = count;
  q.timeout_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(timeout.count(), 0));
  q.retire = retire;
  auto r = impl_->call(std::move(q), timeout + impl_->options().request_timeout, "gather '" + prefix + "'");
  if (r.values.size() != count) {
    throw FabricError("gather '" + prefix + "': the server answered " + std::to_string(r.values.size()) +
                      " values for " + std::to_string(count) + " keys");
  }
  // A standby must not be given back what the server erased.
  impl_->forget_sets_under(retire);
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

View Client::view() const { return impl_->view(); }
std::string Client::local_address() const { return impl_->local_address(); }

void Client::on_member_lost(std::function<void(const MemberLost&)> callback) {
  impl_->on_member_lost(std::move(callback));
}

void Client::on_view(std::function<void(const View&, const std::vector<MemberLost>&)> callback) {
  impl_->on_view(std::move(callback));
}

SuspectVerdict Client::suspect(int rank, Evidence evidence, const std::string& reason) {
  return impl_->suspect(rank, evidence, reason);
}

void Client::set_standbys(std::vector<std::pair<int, Endpoint>> standbys) { impl_->set_standbys(std::move(standbys)); }

void Client::leave() { impl_->leave(); }

int Client::rank() const { return impl_->rank(); }

std::vector<std::string> Client::refused_joins() const { return impl_->refused_joins(); }

void Client::admit(std::chrono::milliseconds timeout) {
  wire::Request q;
  q.op = wire::Op::admit;
  impl_->call(std::move(q), timeout, "admit joiner");
}

}  // namespace murmur::fabric::rendezvous
