// The client's io thread: connecting and saying Hello, reading the server's
// answers and pushes, heartbeats, and failing over to a member's standby
// server when the server is lost (client.h, "Failover").
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "common/job_token.h"
#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/client_impl.h"
#include "fabric/rendezvous/hello_proof.h"

namespace murmur::fabric::rendezvous {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
std::string name_of(const Endpoint& where) { return where.host + ":" + std::to_string(where.port); }
}  // namespace

asio::awaitable<std::shared_ptr<Connection>> Client::Impl::open(Endpoint where, Clock::time_point deadline,
                                                                bool retry) {
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto backoff = std::chrono::milliseconds(50);
  std::string last_error = "no attempt";
  for (;;) {
    auto endpoints = co_await resolver.async_resolve(where.host, std::to_string(where.port),
                                                     asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      // Shared with the deadline's handler, which may already be queued
      // when the connect completes: it must find the socket alive.
      auto socket = std::make_shared<tcp::socket>(io_);
      auto connecting = std::make_shared<bool>(true);
      // A host that drops SYNs must not hold us past the deadline.
      asio::steady_timer bound(io_, deadline);
      bound.async_wait([socket, connecting](const boost::system::error_code& e) {
        boost::system::error_code ignored;
        if (!e && *connecting) socket->close(ignored);
      });
      co_await asio::async_connect(*socket, endpoints, asio::redirect_error(asio::use_awaitable, ec));
      *connecting = false;
      bound.cancel();
      if (!ec && socket->is_open()) {
        socket->set_option(tcp::no_delay(true), ec);
        co_return std::make_shared<Connection>(std::move(*socket));
      }
      if (!ec) ec = asio::error::timed_out;
    }
    last_error = ec.message();
    const auto now = Clock::now();
    if (!retry || now >= deadline) {
      throw FabricError(me() + ": cannot connect to rendezvous server " + name_of(where) + ": " + last_error);
    }
    // The server may simply not be up yet: retry with a growing pause.
    asio::steady_timer pause(io_, std::min<Clock::duration>(backoff, deadline - now));
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

wire::Hello Client::Impl::hello(bool rejoin) const {
  wire::Hello h;
  h.token = options_.token;
  h.host = options_.self_host;
  h.signature = options_.signature;
  std::lock_guard lock(mutex_);
  h.rank = rank_;
  h.size = world_size_;
  if (rank_ < 0) {
    h.join = true;  // a joiner's first Hello: the server assigns its id
    return h;
  }
  if (rejoin && view_known_) {
    h.rejoin = true;
    h.generation = view_.generation;
    h.members = view_.members;
  } else if (options_.rejoin_view) {
    h.rejoin = true;
    h.generation = options_.rejoin_view->generation;
    h.members = options_.rejoin_view->members;
  }
  return h;
}

asio::awaitable<wire::Welcome> Client::Impl::say_hello(std::shared_ptr<Connection> conn, wire::Hello hello,
                                                       Clock::time_point deadline, const std::string& where) {
  // The server proves the job token over this in its Challenge.
  if (!options_.job_token.empty()) hello.nonce = std::string(job_token::bytes_of(job_token::make_nonce()));
  conn->send(wire::encode(hello));
  // A server that accepts but never answers (a stopped process) must not hang us.
  asio::steady_timer hello_timer(io_, deadline);
  hello_timer.async_wait([conn](const boost::system::error_code& ec) {
    if (!ec) conn->close();
  });
  // At most two answers: a Challenge (the server has a job token), then the
  // Welcome.
  bool challenged = false;
  wire::ServerMessage message;
  for (;;) {
    std::optional<std::vector<std::uint64_t>> body;
    try {
      body = co_await conn->read_frame(options_.max_message_bytes);
    } catch (const boost::system::system_error&) {
      // handled below as "no answer"
    }
    if (!body) {
      hello_timer.cancel();
      throw FabricError(me() + ": rendezvous server " + where + " closed the connection without answering Hello" +
                        (Clock::now() >= deadline ? " (timed out)" : ""));
    }
    message = wire::decode_server(*body, options_.max_message_bytes);
    const auto* challenge = std::get_if<wire::Challenge>(&message);
    if (challenge == nullptr) break;
    if (challenged) throw FabricError(me() + ": rendezvous server " + where + " challenged Hello twice");
    if (options_.job_token.empty()) {
      throw FabricError(me() + ": rendezvous server " + where +
                        " asks for a proof of the job token and this process has none; set " +
                        job_token::kEnvironmentVariable + " to the job's token (murmur-run sets it for its peers)");
    }
    if (!hello_proof_matches(Prover::kServer, options_.job_token, hello.nonce, challenge->proof)) {
      throw FabricError(me() + ": rendezvous server " + where +
                        " could not prove the job token: it is not this job's server (another job's, or a process "
                        "holding its address), or its " +
                        job_token::kEnvironmentVariable + " differs");
    }
    challenged = true;
    hello.proof = hello_proof(Prover::kClient, options_.job_token, challenge->nonce);
    conn->send(wire::encode(hello));
  }
  hello_timer.cancel();
  const auto* welcome = std::get_if<wire::Welcome>(&message);
  if (welcome == nullptr)
    throw FabricError(me() + ": rendezvous server " + where + " answered Hello with something else");
  if (welcome->ok && !challenged && !options_.job_token.empty()) {
    throw FabricError(me() + ": rendezvous server " + where +
                      " does not check the job token (it has none) but this process has " +
                      job_token::kEnvironmentVariable +
                      "; give the server (murmur-rendezvous, --host-rendezvous) the same token or unset it here");
  }
  if (!welcome->ok) {
    throw FabricError("rendezvous server " + where + " refused rank " + std::to_string(rank()) + ": " +
                      welcome->refused);
  }
  co_return *welcome;
}

void Client::Impl::use_connection(std::shared_ptr<Connection> conn, const Endpoint& where) {
  const std::string name = name_of(where);
  server_endpoint_ = where;
  conn_ = std::move(conn);
  ++epoch_;
  last_heard_ = Clock::now();
  stale_reason_.clear();
  {
    std::lock_guard lock(mutex_);
    server_ = name;
    local_address_ = conn_->local_address();
  }
  asio::co_spawn(io_, heartbeats(conn_), asio::detached);
}

asio::awaitable<void> Client::Impl::run() {
  const auto deadline = Clock::now() + options_.connect_timeout;
  const Endpoint first{options_.server_host, options_.server_port};
  try {
    auto conn = co_await open(first, deadline, /*retry=*/true);
    const auto welcome = co_await say_hello(conn, hello(false), deadline, name_of(first));
    if (options_.join) {
      // Untrusted: an id below 0 or a world size that cannot hold the job is no answer.
      if (welcome.rank < 0 || welcome.size <= 0) {
        throw FabricError(me() + ": rendezvous server " + name_of(first) + " admitted a joiner without an id (rank " +
                          std::to_string(welcome.rank) + ", size " + std::to_string(welcome.size) + ")");
      }
      std::lock_guard lock(mutex_);
      rank_ = welcome.rank;
      world_size_ = welcome.size;
    }
    use_connection(std::move(conn), first);
  } catch (const std::exception& e) {
    fail_connect(std::current_exception());
    co_return;
  }
  {
    std::lock_guard lock(mutex_);
    state_ = State::ready;
  }
  cv_.notify_all();
  rendezvous_log().debug("{}: joined at {}", me(), name_of(first));

  for (;;) {
    const std::string reason = co_await read_loop(conn_);
    bool leaving;
    {
      std::lock_guard lock(mutex_);
      leaving = leaving_;
    }
    if (leaving || !co_await fail_over(reason)) {
      connection_lost(reason);
      co_return;
    }
  }
}

asio::awaitable<std::string> Client::Impl::read_loop(std::shared_ptr<Connection> conn) {
  try {
    for (;;) {
      auto body = co_await conn->read_frame(options_.max_message_bytes);
      if (!body) co_return "the server closed the connection";
      last_heard_ = Clock::now();
      dispatch(wire::decode_server(*body, options_.max_message_bytes));
    }
  } catch (const boost::system::system_error& e) {
    co_return stale_reason_.empty() ? e.code().message() : stale_reason_;
  } catch (const std::exception& e) {
    co_return std::string("bad message from the server: ") + e.what();
  }
}

asio::awaitable<void> Client::Impl::heartbeats(std::shared_ptr<Connection> conn) {
  wire::Request beat;
  beat.id = wire::kHeartbeatEchoId;  // answered: silence from the server is noticed
  const auto frame = wire::encode(beat);
  for (;;) {
    const auto due = Clock::now() + options_.heartbeat_interval;
    heartbeat_timer_.expires_at(due);
    boost::system::error_code ec;
    co_await heartbeat_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || conn != conn_ || !conn->is_open()) co_return;
    // A timer that fires a whole interval late means this process did not
    // run (a host stalled for seconds: seen on an overloaded VM during the
    // soak, docs/testing.md): the server's answers may be waiting unread in
    // the socket, and read_loop() runs only after this handler. Judge the
    // server at the next beat, not now, or every member of a stalled host
    // fails over at once and is declared lost.
    const bool stalled_here = Clock::now() - due > options_.heartbeat_interval;
    if (!stalled_here && Clock::now() - last_heard_ > heartbeat_stale()) {
      stale_reason_ = "no answer to heartbeats for " +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(heartbeat_stale()).count()) +
                      " ms";
      conn->close();  // read_loop() ends with stale_reason_
      co_return;
    }
    conn->send(frame);
  }
}

asio::awaitable<bool> Client::Impl::fail_over(const std::string& reason) {
  heartbeat_timer_.cancel();
  conn_->close();
  std::vector<Endpoint> candidates;
  std::vector<int> ranks;
  std::string lost_server;
  {
    std::lock_guard lock(mutex_);
    if (expelled_ || !view_known_ || standbys_.empty()) co_return false;
    lost_server = server_;
    // The server itself first: a connection can end while its server lives
    // (this process was stopped past heartbeat_stale and expelled, or the
    // server closed it for a fault). Only a server that does not answer is
    // replaced; otherwise a member the job expelled would fail over to a
    // standby of its own and go on alone (split brain). The server answers
    // an expelled member with the view that lacks it.
    candidates.push_back(server_endpoint_);
    ranks.push_back(-1);
    // Then the lowest-ranked live member's standby, so that every client
    // converges on the same one.
    for (const auto& m : view_.members) {
      for (const auto& [rank, where] : standbys_) {
        if (rank != m.rank || name_of(where) == lost_server) continue;
        candidates.push_back(where);
        ranks.push_back(rank);
      }
    }
  }
  rendezvous_log().debug("{}: rendezvous server {} lost ({}); failing over", me(), lost_server, reason);
  // Two passes: a standby refusing in the first may have settled by the second.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const auto deadline = Clock::now() + options_.failover_connect_timeout;
      try {
        auto conn = co_await open(candidates[i], deadline, /*retry=*/false);
        co_await say_hello(conn, hello(true), deadline, name_of(candidates[i]));
        use_connection(std::move(conn), candidates[i]);
      } catch (const std::exception& e) {
        rendezvous_log().debug("{}: standby of rank {}: {}", me(), ranks[i], e.what());
        continue;
      }
      if (ranks[i] < 0) {
        rendezvous_log().warn("{}: connection to rendezvous server {} lost ({}); reconnected", me(), lost_server,
                              reason);
      } else {
        rendezvous_log().warn("{}: rendezvous server {} lost ({}); rank {}'s standby at {} took over", me(),
                              lost_server, reason, ranks[i], name_of(candidates[i]));
      }
      resend_after_failover();
      co_return true;
    }
  }
  rendezvous_log().error("{}: rendezvous server {} lost ({}) and no standby accepted", me(), lost_server, reason);
  co_return false;
}

void Client::Impl::resend_after_failover() {
  std::vector<std::vector<std::byte>> frames;
  {
    std::lock_guard lock(mutex_);
    // Keys first: a re-issued wait or gather may be waiting for one of them.
    for (const auto& [key, value] : recent_sets_) {
      wire::Request q;  // id 0: no answer wanted
      q.op = wire::Op::set;
      q.key = key;
      q.value = value;
      frames.push_back(wire::encode(q));
    }
    for (auto& [id, call] : pending_) {
      if (call->sent_on == epoch_) continue;
      call->sent_on = epoch_;
      frames.push_back(wire::encode(to_send(*call)));
    }
  }
  for (auto& f : frames) conn_->send(std::move(f));
}

void Client::Impl::dispatch(wire::ServerMessage message) {
  if (auto* lost = std::get_if<MemberLost>(&message)) {
    notify(*lost);
    return;
  }
  if (auto* changed = std::get_if<wire::ViewChanged>(&message)) {
    take_view(std::move(*changed));
    return;
  }
  if (auto* refused = std::get_if<wire::JoinRefused>(&message)) {
    note_refused_join(*refused);
    return;
  }
  if (auto* response = std::get_if<wire::Response>(&message)) {
    {
      std::lock_guard lock(mutex_);
      auto it = pending_.find(response->id);
      if (it == pending_.end()) return;  // a heartbeat echo, or its caller gave up already
      it->second->done = true;
      it->second->response = std::move(*response);
      pending_.erase(it);
    }
    cv_.notify_all();
  }
}

void Client::Impl::take_view(wire::ViewChanged changed) {
  std::function<void(const View&, const std::vector<MemberLost>&)> callback;
  {
    std::lock_guard lock(mutex_);
    // Old or repeated views (a standby telling us what we know) are not news.
    if (view_known_ && changed.view.generation <= view_.generation) return;
    // A view adopted after a failover may skip changes this client never
    // saw: whoever it held and the new view lacks was lost too.
    for (const auto& m : view_.members) {
      const auto in = [&](const auto& list) {
        return std::any_of(list.begin(), list.end(), [&](const auto& x) { return x.rank == m.rank; });
      };
      if (!in(changed.view.members) && !in(changed.lost)) {
        changed.lost.push_back(MemberLost{m.rank, m.host, "lost while the rendezvous server failed over", false});
      }
    }
    view_ = changed.view;
    view_known_ = true;
    expelled_ =
        std::none_of(view_.members.begin(), view_.members.end(), [&](const Member& m) { return m.rank == rank_; });
    callback = view_callback_;
  }
  if (!callback) return;
  try {
    callback(changed.view, changed.lost);
  } catch (const std::exception& e) {
    rendezvous_log().error("{}: on_view callback threw: {}", me(), e.what());
  }
}

}  // namespace murmur::fabric::rendezvous
