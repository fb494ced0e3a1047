// The asio Transport: a listening socket, one Link per peer, one io_context
// run by one thread. Connection set-up (listen, dial, handshake) lives here;
// per-peer traffic lives in link.cc, the wire format in wire.cc. isend
// writes from the caller's thread when the link lets it (Link::
// send_from_caller) and irecv posts its receive from the caller's thread
// (Link::post_recv); everything else is posted to the io thread.
#include "fabric/asio/transport.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/host_name.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>

#include "common/background_thread.h"
#include "common/close_on_exec.h"
#include "common/job_token.h"
#include "common/log.h"
#include "common/once_per_source.h"
#include "common/trace.h"
#include "fabric/asio/auth.h"
#include "fabric/asio/link.h"
#include "fabric/asio/wire.h"
#include "fabric/errors.h"
#include "fabric/peer_list.h"
#include "fabric/spin_wait_driver.h"

namespace murmur::fabric::asio {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

// How long an accepted connection may take to complete its handshake.
constexpr auto kHandshakeTimeout = 10s;

// "host:port" or "[v6]:port" -> (host, port).
std::pair<std::string, std::string> split_address(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) throw FabricError("asio: address '" + address + "' is not host:port");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, address.substr(colon + 1)};
}

void set_socket_options(tcp::socket& socket) {
  // Socket buffers stay with the kernel's autotuning: an explicit SO_RCVBUF
  // is capped by net.core.rmem_max (4 MiB here) and switches autotuning off,
  // which may grow to tcp_rmem's maximum (32 MiB here).
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
}

class AsioTransport final : public Transport {
 public:
  explicit AsioTransport(const TransportOptions& options);
  ~AsioTransport() override;

  int rank() const override { return options_.rank; }
  int size() const override { return size_.load(); }
  std::string name() const override { return "asio"; }
  std::string address() const override { return address_; }
  void connect(const std::vector<PeerInfo>& peers) override;
  void add_peer(const PeerInfo& peer) override;
  RequestPtr isendv(int peer, Tag tag, SendPieces pieces) override;
  RequestPtr irecv(int peer, Tag tag, void* data, std::size_t capacity) override;
  void fail_peer(int peer, std::exception_ptr error) override;

 private:
  void check_peer(int peer, const char* call) const;
  // io thread only, from here on.
  struct Accepting;
  void accept_next();
  // The steps of accepting (auth.h): the handshake checked, our reply (with
  // our nonce and proof when we have a token) sent, the dialer's proof
  // checked, then the socket is attached to the Link.
  void on_hello(std::shared_ptr<Accepting> a);
  void send_reply(std::shared_ptr<Accepting> a, std::size_t bytes);
  void admit(Accepting& a);
  // Closes a connection that failed set-up: counted, logged once per address.
  void refuse(Accepting& a, const std::string& why);
  void dial(int peer, std::string host, std::string port);
  void on_connected(int peer);
  // Our side of a handshake with `peer` on `socket`. The size sent is what
  // we know now; it is informative only (see on_hello).
  wire::HandshakeBytes handshake_to(int peer, const tcp::socket& socket) const {
    return wire::encode_handshake(
        {.rank = options_.rank,
         .size = static_cast<int>(links_.size()),
         .target = peer,
         .proves_token = !options_.job_token.empty(),
         .wants_payload_checksum = Link::wants_payload_checksum(socket, options_.asio_payload_checksum)});
  }
  // Grows links_ to cover `peer` (ranks skipped over fail as absent) and
  // dials it.
  void open_link(const PeerInfo& peer, const std::string& host, const std::string& port);
  void close_all();
  // Blocks until every rank in `ranks` is connected or `deadline` passes;
  // returns whether they all are.
  bool wait_connected(const std::vector<int>& ranks, Clock::time_point deadline);
  // On the io thread: fails those of `ranks` still unconnected with "not
  // connected within the connect timeout"; returns them as "rank r (host)"
  // (empty if all connected meanwhile). Stops dialing them.
  std::string give_up_on(const std::vector<int>& ranks);

  const TransportOptions options_;
  // Members in creation order; they close in reverse.
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  tcp::acceptor acceptor_;
  std::string address_;
  // Grown only by the io thread, under links_mutex_'s exclusive lock;
  // isend and irecv read it from callers' threads under a shared one (the
  // io thread reads it without).
  std::vector<std::unique_ptr<Link>> links_;
  std::shared_mutex links_mutex_;
  // Set on every request: a waiter polls it for the spin before sleeping.
  const std::shared_ptr<SpinWaitDriver> spin_driver_;
  std::vector<std::unique_ptr<net::steady_timer>> retry_timers_;
  // Connections refused at set-up (bad handshake or proof, time-out); the
  // addresses logged so far, and the dial failures logged.
  std::atomic<std::size_t> refused_{0};
  OncePerSource refused_sources_;
  OncePerSource dial_failures_logged_;
  bool closing_ = false;          // io thread only
  bool dialing_stopped_ = false;  // io thread only
  // Ranks below it have a Link; isend / irecv to higher ones are refused.
  // Stored only once the io thread has grown links_ (add_peer).
  std::atomic<int> size_;
  std::atomic<bool> connect_called_{false};

  // Lock order: add_mutex_ before mutex_; both before none other.
  std::mutex add_mutex_;  // serialises add_peer's check and growth
  std::mutex mutex_;      // guards up_; leaf lock
  std::condition_variable connected_cv_;
  std::set<int> up_;  // ranks whose link has come up

  std::thread thread_;  // last: started once everything above exists
};

AsioTransport::AsioTransport(const TransportOptions& options)
    : options_(options),
      work_(net::make_work_guard(io_)),
      acceptor_(io_),
      spin_driver_(std::make_shared<SpinWaitDriver>(options.max_spin)),
      size_(options.size) {
  if (options_.chunk_bytes == 0) throw FabricError("asio: chunk_bytes must be positive");
  std::string bind = options_.bind_host;
  std::string advertised = bind;
  if (bind.empty()) {
    bind = options_.peers_on_this_host ? "127.0.0.1" : "0.0.0.0";
    advertised = options_.peers_on_this_host ? bind : net::ip::host_name();
  }
  try {
    tcp::resolver resolver(io_);
    const auto endpoints = resolver.resolve(bind, "0", tcp::resolver::passive);
    const tcp::endpoint endpoint = endpoints.begin()->endpoint();
    acceptor_.open(endpoint.protocol());
    set_close_on_exec(acceptor_.native_handle());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen();
    const std::string port = std::to_string(acceptor_.local_endpoint().port());
    address_ = (advertised.find(':') != std::string::npos ? "[" + advertised + "]" : advertised) + ":" + port;
  } catch (const boost::system::system_error& e) {
    throw FabricError("asio: cannot listen on " + bind + ": " + e.code().message());
  }
  links_.reserve(options_.size);
  for (int r = 0; r < options_.size; ++r) {
    links_.push_back(std::make_unique<Link>(r, options_.chunk_bytes, options_.max_unexpected_bytes, r == options_.rank,
                                            options_.asio_payload_checksum));
  }
  links_[options_.rank]->set_host("self");
  accept_next();
  thread_ = start_background_thread([this] {
    trace::name_thread("asio io");
    io_.run();
  });
  fabric_log().debug("asio transport rank {}/{} listening on {}", options_.rank, options_.size, address_);
  if (options_.job_token.empty()) job_token::note_unauthenticated("fabric", "the asio data plane");
}

AsioTransport::~AsioTransport() {
  net::post(io_, [this] { close_all(); });
  work_.reset();
  thread_.join();
  if (refused_ > 0) {
    fabric_log().warn("asio rank {}: refused {} connection(s) at set-up in all", options_.rank, refused_.load());
  }
}

void AsioTransport::close_all() {
  closing_ = true;
  dialing_stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  for (auto& timer : retry_timers_) timer->cancel();
  for (auto& link : links_) {
    link->fail(std::make_exception_ptr(PeerError(link->rank(), link->host(), "transport closed")));
  }
  // Handshakes still in progress hold their own sockets; stop() drops them
  // with their handlers when io_ is destroyed.
  io_.stop();
}

void AsioTransport::check_peer(int peer, const char* call) const {
  const int size = size_.load();
  if (peer < 0 || peer >= size) {
    throw FabricError(std::string("asio: ") + call + " to rank " + std::to_string(peer) + " outside a group of size " +
                      std::to_string(size));
  }
}

// ---- accepting ---------------------------------------------------------------

// One connection being accepted: its socket, its handshake's buffers, and the
// timer that closes it if the handshake does not complete in time.
struct AsioTransport::Accepting {
  Accepting(net::io_context& io, tcp::socket s) : socket(std::move(s)), deadline(io) {}
  tcp::socket socket;
  net::steady_timer deadline;
  std::string from;  // the remote address, for logs
  wire::HandshakeBytes hello{};
  int peer = -1;  // the rank it claims, once its handshake checked out
  bool peer_wants_payload_checksum = true;
  job_token::Nonce their_nonce{};  // the dialer's
  job_token::Nonce our_nonce{};
  std::array<unsigned char, wire::kHandshakeBytes + auth::kNonceBytes + auth::kProofBytes> reply{};
  job_token::Proof their_proof{};
};

void AsioTransport::accept_next() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (closing_ || ec == net::error::operation_aborted) return;
    if (ec) {
      fabric_log().warn("asio rank {}: accept failed: {}", options_.rank, ec.message());
    } else {
      set_close_on_exec(socket.native_handle());
      auto a = std::make_shared<Accepting>(io_, std::move(socket));
      boost::system::error_code ignored;
      a->from = a->socket.remote_endpoint(ignored).address().to_string();
      // A peer's handshake takes a round trip or two; a connection that
      // stays silent must not hold a socket for good.
      a->deadline.expires_after(kHandshakeTimeout);
      a->deadline.async_wait([a](const boost::system::error_code& timer_ec) {
        boost::system::error_code ignored_close;
        if (!timer_ec) a->socket.close(ignored_close);
      });
      net::async_read(a->socket, net::buffer(a->hello),
                      [this, a](const boost::system::error_code& read_ec, std::size_t) {
                        if (closing_) return;
                        if (read_ec) return refuse(*a, "handshake not received: " + read_ec.message());
                        on_hello(a);
                      });
    }
    accept_next();
  });
}

void AsioTransport::refuse(Accepting& a, const std::string& why) {
  const auto refused = ++refused_;
  // Once per address: 20,000 forged connections log one line, and count.
  if (refused_sources_.first(a.from)) {
    fabric_log().warn(
        "asio rank {}: refused a connection from {}: {} (refusals from this address are counted, not logged again)",
        options_.rank, a.from, why);
  } else {
    fabric_log().debug("asio rank {}: refused connection {} from {}: {}", options_.rank, refused, a.from, why);
  }
  boost::system::error_code ignored;
  a.deadline.cancel();
  a.socket.close(ignored);
}

void AsioTransport::on_hello(std::shared_ptr<Accepting> a) {
  std::string why;
  const auto hs = wire::decode_handshake(a->hello, &why);
  const bool have_token = !options_.job_token.empty();
  // Sizes are not compared: they differ once peers have joined (a member
  // that added rank 5 has 6 ranks, a joiner with id 4 has 5). The rule that
  // lower ranks dial higher ones holds for a joiner, whose id is above
  // every member's.
  if (hs) {
    if (hs->target != options_.rank) {
      why = "it meant to reach rank " + std::to_string(hs->target);
    } else if (hs->rank < 0 || hs->rank >= options_.rank) {
      why = "rank " + std::to_string(hs->rank) + " is not a lower rank of this group";
    } else if (links_[hs->rank]->connected() || links_[hs->rank]->failed()) {
      why = "rank " + std::to_string(hs->rank) + " is already connected or failed";
    } else if (have_token && !hs->proves_token) {
      why = "it claims rank " + std::to_string(hs->rank) + " without proving the job token (" +
            job_token::kEnvironmentVariable + " unset there?)";
    } else if (!have_token && hs->proves_token) {
      why = std::string("it proves a job token and this process has none (") + job_token::kEnvironmentVariable +
            " unset here)";
    }
  }
  if (!why.empty()) return refuse(*a, why);
  a->peer = hs->rank;
  a->peer_wants_payload_checksum = hs->wants_payload_checksum;
  if (!have_token) return send_reply(a, wire::kHandshakeBytes);
  net::async_read(a->socket, net::buffer(a->their_nonce), [this, a](const boost::system::error_code& ec, std::size_t) {
    if (closing_) return;
    if (ec) return refuse(*a, "its nonce did not arrive: " + ec.message());
    a->our_nonce = job_token::make_nonce();
    const auto proof = auth::prove(options_.job_token, auth::Side::kAcceptor, a->their_nonce, options_.rank, a->peer);
    std::memcpy(a->reply.data() + wire::kHandshakeBytes, a->our_nonce.data(), auth::kNonceBytes);
    std::memcpy(a->reply.data() + wire::kHandshakeBytes + auth::kNonceBytes, proof.data(), auth::kProofBytes);
    send_reply(a, a->reply.size());
  });
}

void AsioTransport::send_reply(std::shared_ptr<Accepting> a, std::size_t bytes) {
  const auto hs = handshake_to(a->peer, a->socket);
  std::memcpy(a->reply.data(), hs.data(), hs.size());
  net::async_write(
      a->socket, net::buffer(a->reply.data(), bytes), [this, a](const boost::system::error_code& ec, std::size_t) {
        if (closing_) return;
        if (ec) return refuse(*a, "handshake reply to rank " + std::to_string(a->peer) + " failed: " + ec.message());
        if (options_.job_token.empty()) return admit(*a);
        net::async_read(a->socket, net::buffer(a->their_proof),
                        [this, a](const boost::system::error_code& read_ec, std::size_t) {
                          if (closing_) return;
                          if (read_ec)
                            return refuse(*a, "its proof of the job token did not arrive: " + read_ec.message());
                          if (!auth::check(options_.job_token, auth::Side::kDialer, a->our_nonce, a->peer,
                                           options_.rank, a->their_proof)) {
                            return refuse(*a, "wrong proof of the job token for rank " + std::to_string(a->peer) +
                                                  " (a process with another job's token)");
                          }
                          admit(*a);
                        });
      });
}

void AsioTransport::admit(Accepting& a) {
  a.deadline.cancel();
  const int peer = a.peer;
  if (links_[peer]->connected() || links_[peer]->failed()) return;
  set_socket_options(a.socket);
  if (links_[peer]->host() == "unknown host") links_[peer]->set_host(a.from);
  links_[peer]->attach(std::make_unique<tcp::socket>(std::move(a.socket)), a.peer_wants_payload_checksum);
  on_connected(peer);
}

// ---- dialing -----------------------------------------------------------------

void AsioTransport::dial(int peer, std::string host, std::string port) {
  if (dialing_stopped_ || links_[peer]->failed()) return;
  struct Attempt {
    tcp::resolver resolver;
    tcp::socket socket;
    std::array<unsigned char, wire::kHandshakeBytes + auth::kNonceBytes> hello{};
    job_token::Nonce our_nonce{};
    std::array<unsigned char, wire::kHandshakeBytes + auth::kNonceBytes + auth::kProofBytes> reply{};
    job_token::Proof our_proof{};
  };
  auto attempt = std::make_shared<Attempt>(Attempt{tcp::resolver(io_), tcp::socket(io_), {}, {}, {}, {}});
  auto retry = [this, peer, host, port](const std::string& why) {
    if (dialing_stopped_ || links_[peer]->failed()) return;
    fabric_log().debug("asio rank {}: dialing rank {} ({}:{}) again: {}", options_.rank, peer, host, port, why);
    auto timer = std::make_unique<net::steady_timer>(io_, 50ms);
    timer->async_wait([this, peer, host, port](const boost::system::error_code& ec) {
      if (!ec) dial(peer, host, port);
    });
    retry_timers_.push_back(std::move(timer));
  };
  const bool have_token = !options_.job_token.empty();
  const std::size_t hello_bytes = wire::kHandshakeBytes + (have_token ? auth::kNonceBytes : 0);
  const std::size_t reply_bytes = wire::kHandshakeBytes + (have_token ? auth::kNonceBytes + auth::kProofBytes : 0);
  // The reply checked: the acceptor is rank `peer` of this job (if we have
  // a token, it proved it); our proof goes out, then the link is up.
  auto finish = [this, attempt, peer, retry, have_token]() {
    std::string why;
    wire::HandshakeBytes hs_bytes;
    std::memcpy(hs_bytes.data(), attempt->reply.data(), hs_bytes.size());
    const auto hs = wire::decode_handshake(hs_bytes, &why);
    if (hs && (hs->rank != peer || hs->target != options_.rank)) {
      why = "answered as rank " + std::to_string(hs->rank) + " of " + std::to_string(hs->size);
    } else if (hs && hs->proves_token != have_token) {
      why =
          have_token ? "it answered without proving the job token" : "it proves a job token and this process has none";
    } else if (hs && have_token) {
      job_token::Nonce their_nonce;
      job_token::Proof their_proof;
      std::memcpy(their_nonce.data(), attempt->reply.data() + wire::kHandshakeBytes, auth::kNonceBytes);
      std::memcpy(their_proof.data(), attempt->reply.data() + wire::kHandshakeBytes + auth::kNonceBytes,
                  auth::kProofBytes);
      if (!auth::check(options_.job_token, auth::Side::kAcceptor, attempt->our_nonce, peer, options_.rank,
                       their_proof)) {
        why = "its proof of the job token is wrong (a process of another job holds its port?)";
      }
      attempt->our_proof = auth::prove(options_.job_token, auth::Side::kDialer, their_nonce, options_.rank, peer);
    }
    if (!why.empty()) {
      if (dial_failures_logged_.first(std::to_string(peer) + " " + why)) {
        fabric_log().warn("asio rank {}: bad handshake reply from rank {} ({}): {}", options_.rank, peer,
                          links_[peer]->host(), why);
      }
      return retry(why);
    }
    auto attach = [this, attempt, peer, peer_wants_payload_checksum = hs->wants_payload_checksum]() {
      if (links_[peer]->connected() || links_[peer]->failed()) return;
      set_socket_options(attempt->socket);
      links_[peer]->attach(std::make_unique<tcp::socket>(std::move(attempt->socket)), peer_wants_payload_checksum);
      on_connected(peer);
    };
    if (!have_token) return attach();
    net::async_write(attempt->socket, net::buffer(attempt->our_proof),
                     [this, retry, attach](const boost::system::error_code& ec, std::size_t) {
                       if (closing_) return;
                       if (ec) return retry("sending the proof of the job token: " + ec.message());
                       attach();
                     });
  };
  attempt->resolver.async_resolve(
      host, port,
      [this, attempt, peer, retry, finish, have_token, hello_bytes, reply_bytes](const boost::system::error_code& ec,
                                                                                 tcp::resolver::results_type results) {
        if (closing_) return;
        if (ec) return retry("resolve: " + ec.message());
        net::async_connect(
            attempt->socket, results,
            [this, attempt, peer, retry, finish, have_token, hello_bytes, reply_bytes](
                const boost::system::error_code& ec, const tcp::endpoint&) {
              if (closing_) return;
              if (ec) return retry("connect: " + ec.message());
              set_close_on_exec(attempt->socket.native_handle());
              const auto hs = handshake_to(peer, attempt->socket);
              std::memcpy(attempt->hello.data(), hs.data(), hs.size());
              if (have_token) {
                attempt->our_nonce = job_token::make_nonce();
                std::memcpy(attempt->hello.data() + hs.size(), attempt->our_nonce.data(), auth::kNonceBytes);
              }
              net::async_write(
                  attempt->socket, net::buffer(attempt->hello.data(), hello_bytes),
                  [this, attempt, retry, finish, reply_bytes](const boost::system::error_code& ec, std::size_t) {
                    if (closing_) return;
                    if (ec) return retry("handshake: " + ec.message());
                    net::async_read(attempt->socket, net::buffer(attempt->reply.data(), reply_bytes),
                                    [this, retry, finish](const boost::system::error_code& ec, std::size_t) {
                                      if (closing_) return;
                                      if (ec) return retry("handshake reply: " + ec.message());
                                      finish();
                                    });
                  });
            });
      });
}

void AsioTransport::on_connected(int peer) {
  fabric_log().debug("asio rank {}: connected to rank {} ({})", options_.rank, peer, links_[peer]->host());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    up_.insert(peer);
  }
  connected_cv_.notify_all();
}

bool AsioTransport::wait_connected(const std::vector<int>& ranks, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  return connected_cv_.wait_until(lock, deadline, [&] {
    return std::all_of(ranks.begin(), ranks.end(), [&](int r) { return up_.count(r) != 0; });
  });
}

std::string AsioTransport::give_up_on(const std::vector<int>& ranks) {
  std::promise<std::string> missing_promise;
  auto missing_future = missing_promise.get_future();
  net::post(io_, [this, &ranks, &missing_promise] {
    std::string missing;
    for (int r : ranks) {
      Link& link = *links_[r];
      if (link.connected() || link.failed()) continue;
      if (!missing.empty()) missing += ", ";
      missing += "rank " + std::to_string(r) + " (" + link.host() + ")";
      // A failed link is dialed no more (dial() checks).
      link.fail(std::make_exception_ptr(PeerError(r, link.host(), "not connected within the connect timeout")));
    }
    missing_promise.set_value(missing);
  });
  return missing_future.get();
}

void AsioTransport::connect(const std::vector<PeerInfo>& peers) {
  check_peer_list(peers, options_.size, options_.rank, "asio");
  if (connect_called_.exchange(true))
    throw FabricError("asio rank " + std::to_string(options_.rank) + ": connect() called twice");
  std::vector<int> live;
  for (int r = 0; r < options_.size; ++r) {
    if (r != options_.rank && !is_absent(peers[r])) live.push_back(r);
  }
  // Lower ranks dial higher ones; each side waits for its live peers.
  net::post(io_, [this, peers] {
    for (int r = 0; r < options_.size; ++r) {
      if (r == options_.rank) continue;
      if (!peers[r].host.empty()) links_[r]->set_host(peers[r].host);
      if (is_absent(peers[r])) {
        links_[r]->fail(absent_peer_error(r, peers[r].host));
        continue;
      }
      if (r > options_.rank) {
        auto [host, port] = split_address(peers[r].address);
        if (peers[r].host.empty()) links_[r]->set_host(host);
        dial(r, host, port);
      }
    }
  });
  if (wait_connected(live, Clock::now() + options_.connect_timeout)) return;
  const std::string missing = give_up_on(live);
  if (missing.empty()) return;  // the last link came up meanwhile
  throw FabricError("asio rank " + std::to_string(options_.rank) + ": connect timed out after " +
                    std::to_string(options_.connect_timeout.count()) + " ms; still missing " + missing);
}

void AsioTransport::open_link(const PeerInfo& peer, const std::string& host, const std::string& port) {
  for (int r = static_cast<int>(links_.size()); r <= peer.rank; ++r) {
    {
      std::lock_guard<std::shared_mutex> lock(links_mutex_);
      links_.push_back(std::make_unique<Link>(r, options_.chunk_bytes, options_.max_unexpected_bytes, false,
                                              options_.asio_payload_checksum));
    }
    if (r < peer.rank) links_[r]->fail(absent_peer_error(r, "", skipped_rank_reason(peer.rank)));
  }
  links_[peer.rank]->set_host(peer.host.empty() ? host : peer.host);
  dial(peer.rank, host, port);
}

void AsioTransport::add_peer(const PeerInfo& peer) {
  {
    std::lock_guard<std::mutex> add_lock(add_mutex_);
    check_new_peer(peer, size_.load(), options_.rank, connect_called_.load(), "asio");
    const std::pair<std::string, std::string> host_port = split_address(peer.address);
    // The joiner's id is above ours, so we dial (see on_hello). links_ grows
    // on the io thread; size_ only afterwards, so that no isend reaches a
    // link that does not exist yet.
    std::promise<void> grown;
    net::post(io_, [&] {
      open_link(peer, host_port.first, host_port.second);
      grown.set_value();
    });
    grown.get_future().get();
    size_.store(peer.rank + 1);
  }
  fabric_log().info("asio rank {}: rank {} ({}) joins; the group has {} ranks", options_.rank, peer.rank, peer.host,
                    peer.rank + 1);
  const std::vector<int> joiner{peer.rank};
  if (wait_connected(joiner, Clock::now() + options_.connect_timeout)) return;
  if (give_up_on(joiner).empty()) return;
  throw PeerError(peer.rank, peer.host,
                  "asio rank " + std::to_string(options_.rank) + ": the joining peer was not connected within " +
                      std::to_string(options_.connect_timeout.count()) + " ms (connect timeout)");
}

// ---- data --------------------------------------------------------------------

RequestPtr AsioTransport::isendv(int peer, Tag tag, SendPieces pieces) {
  check_peer(peer, "isend");
  auto request = std::make_shared<Request>(Request::Kind::kSend, peer, tag);
  request->set_driver(spin_driver_);
  std::shared_lock<std::shared_mutex> links(links_mutex_);
  Link& link = *links_[peer];
  switch (link.send_from_caller(request, pieces)) {
    case Link::CallerSend::kSent:
      break;
    case Link::CallerSend::kRestLeft:
      net::post(io_, [&link] { link.resume_write(); });
      break;
    case Link::CallerSend::kQueued:
      net::post(io_,
                [&link, request, pieces = std::move(pieces)]() mutable { link.post_send(request, std::move(pieces)); });
      break;
  }
  return request;
}

RequestPtr AsioTransport::irecv(int peer, Tag tag, void* data, std::size_t capacity) {
  check_peer(peer, "irecv");
  auto request = std::make_shared<Request>(Request::Kind::kRecv, peer, tag);
  request->set_driver(spin_driver_);
  // On this thread, as isend's write: no wake-up of the io thread. No
  // callback runs in post_recv (the caller has not had the request yet).
  std::shared_lock<std::shared_mutex> links(links_mutex_);
  links_[peer]->post_recv(request, data, capacity);
  return request;
}

void AsioTransport::fail_peer(int peer, std::exception_ptr error) {
  check_peer(peer, "fail_peer");
  net::post(io_, [this, peer, error] {
    if (!links_[peer]->failed()) {
      fabric_log().warn("asio rank {}: peer rank {} ({}) declared failed", options_.rank, peer, links_[peer]->host());
    }
    links_[peer]->fail(error);
  });
}

}  // namespace

std::unique_ptr<Transport> make_transport(const TransportOptions& options) {
  return std::make_unique<AsioTransport>(options);
}

}  // namespace murmur::fabric::asio
