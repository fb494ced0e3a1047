// The asio Transport: a listening socket, one Link per peer, one io_context
// run by one thread. Connection set-up (listen, dial, handshake) lives here;
// per-peer traffic lives in link.cc, the wire format in wire.cc.
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

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "fabric/asio/link.h"
#include "fabric/asio/wire.h"
#include "fabric/errors.h"

namespace murmur::fabric::asio {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

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
  int size() const override { return options_.size; }
  std::string name() const override { return "asio"; }
  std::string address() const override { return address_; }
  void connect(const std::vector<PeerInfo>& peers) override;
  RequestPtr isend(int peer, Tag tag, const void* data, std::size_t bytes) override;
  RequestPtr irecv(int peer, Tag tag, void* data, std::size_t capacity) override;
  void fail_peer(int peer, std::exception_ptr error) override;

 private:
  void check_peer(int peer, const char* call) const;
  // io thread only, from here on.
  void accept_next();
  void on_hello(std::shared_ptr<tcp::socket> socket, std::shared_ptr<wire::HandshakeBytes> hello);
  void dial(int peer, std::string host, std::string port);
  void on_connected(int peer);
  void close_all();

  const TransportOptions options_;
  // Members in creation order; they close in reverse.
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  tcp::acceptor acceptor_;
  std::string address_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::unique_ptr<net::steady_timer>> retry_timers_;
  bool closing_ = false;          // io thread only
  bool dialing_stopped_ = false;  // io thread only

  std::mutex mutex_;  // guards connected_; leaf lock
  std::condition_variable connected_cv_;
  int connected_ = 0;

  std::thread thread_;  // last: started once everything above exists
};

AsioTransport::AsioTransport(const TransportOptions& options)
    : options_(options), work_(net::make_work_guard(io_)), acceptor_(io_) {
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
    links_.push_back(
        std::make_unique<Link>(r, options_.chunk_bytes, options_.max_unexpected_bytes, r == options_.rank));
  }
  links_[options_.rank]->set_host("self");
  accept_next();
  thread_ = std::thread([this] { io_.run(); });
  fabric_log().debug("asio transport rank {}/{} listening on {}", options_.rank, options_.size, address_);
}

AsioTransport::~AsioTransport() {
  net::post(io_, [this] { close_all(); });
  work_.reset();
  thread_.join();
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
  if (peer < 0 || peer >= options_.size) {
    throw FabricError(std::string("asio: ") + call + " to rank " + std::to_string(peer) + " outside a group of size " +
                      std::to_string(options_.size));
  }
}

// ---- accepting ---------------------------------------------------------------

void AsioTransport::accept_next() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (closing_ || ec == net::error::operation_aborted) return;
    if (ec) {
      fabric_log().warn("asio rank {}: accept failed: {}", options_.rank, ec.message());
    } else {
      auto shared = std::make_shared<tcp::socket>(std::move(socket));
      auto hello = std::make_shared<wire::HandshakeBytes>();
      net::async_read(
          *shared, net::buffer(*hello), [this, shared, hello](const boost::system::error_code& read_ec, std::size_t) {
            if (closing_) return;
            if (read_ec) {
              boost::system::error_code ignored;
              fabric_log().warn("asio rank {}: rejected connection from {}: handshake not received: {}", options_.rank,
                                shared->remote_endpoint(ignored).address().to_string(), read_ec.message());
              return;
            }
            on_hello(shared, hello);
          });
    }
    accept_next();
  });
}

void AsioTransport::on_hello(std::shared_ptr<tcp::socket> socket, std::shared_ptr<wire::HandshakeBytes> hello) {
  boost::system::error_code ignored;
  const auto remote = socket->remote_endpoint(ignored);
  const std::string from = remote.address().to_string();
  std::string why;
  const auto hs = wire::decode_handshake(*hello, &why);
  if (hs) {
    if (hs->size != options_.size) {
      why = "group size " + std::to_string(hs->size) + " differs from ours (" + std::to_string(options_.size) + ")";
    } else if (hs->target != options_.rank) {
      why = "it meant to reach rank " + std::to_string(hs->target);
    } else if (hs->rank < 0 || hs->rank >= options_.rank) {
      why = "rank " + std::to_string(hs->rank) + " is not a lower rank of this group";
    } else if (links_[hs->rank]->connected() || links_[hs->rank]->failed()) {
      why = "rank " + std::to_string(hs->rank) + " is already connected or failed";
    }
  }
  if (!why.empty()) {
    fabric_log().warn("asio rank {}: rejected connection from {}:{}: {}", options_.rank, from, remote.port(), why);
    socket->close(ignored);
    return;
  }
  const int peer = hs->rank;
  auto reply = std::make_shared<wire::HandshakeBytes>(
      wire::encode_handshake({.rank = options_.rank, .size = options_.size, .target = peer}));
  net::async_write(*socket, net::buffer(*reply),
                   [this, socket, reply, peer, from](const boost::system::error_code& ec, std::size_t) {
                     if (closing_) return;
                     if (ec) {
                       fabric_log().warn("asio rank {}: handshake reply to rank {} ({}) failed: {}", options_.rank,
                                         peer, from, ec.message());
                       return;
                     }
                     if (links_[peer]->connected() || links_[peer]->failed()) return;
                     set_socket_options(*socket);
                     if (links_[peer]->host() == "unknown host") links_[peer]->set_host(from);
                     links_[peer]->attach(std::make_unique<tcp::socket>(std::move(*socket)));
                     on_connected(peer);
                   });
}

// ---- dialing -----------------------------------------------------------------

void AsioTransport::dial(int peer, std::string host, std::string port) {
  if (dialing_stopped_ || links_[peer]->failed()) return;
  struct Attempt {
    tcp::resolver resolver;
    tcp::socket socket;
    wire::HandshakeBytes hello;
    wire::HandshakeBytes reply;
  };
  auto attempt = std::make_shared<Attempt>(Attempt{tcp::resolver(io_), tcp::socket(io_), {}, {}});
  auto retry = [this, peer, host, port](const std::string& why) {
    if (dialing_stopped_ || links_[peer]->failed()) return;
    fabric_log().debug("asio rank {}: dialing rank {} ({}:{}) again: {}", options_.rank, peer, host, port, why);
    auto timer = std::make_unique<net::steady_timer>(io_, 50ms);
    timer->async_wait([this, peer, host, port](const boost::system::error_code& ec) {
      if (!ec) dial(peer, host, port);
    });
    retry_timers_.push_back(std::move(timer));
  };
  attempt->resolver.async_resolve(
      host, port,
      [this, attempt, peer, retry](const boost::system::error_code& ec, tcp::resolver::results_type results) {
        if (closing_) return;
        if (ec) return retry("resolve: " + ec.message());
        net::async_connect(
            attempt->socket, results,
            [this, attempt, peer, retry](const boost::system::error_code& ec, const tcp::endpoint&) {
              if (closing_) return;
              if (ec) return retry("connect: " + ec.message());
              attempt->hello = wire::encode_handshake({.rank = options_.rank, .size = options_.size, .target = peer});
              net::async_write(
                  attempt->socket, net::buffer(attempt->hello),
                  [this, attempt, peer, retry](const boost::system::error_code& ec, std::size_t) {
                    if (closing_) return;
                    if (ec) return retry("handshake: " + ec.message());
                    net::async_read(
                        attempt->socket, net::buffer(attempt->reply),
                        [this, attempt, peer, retry](const boost::system::error_code& ec, std::size_t) {
                          if (closing_) return;
                          if (ec) return retry("handshake reply: " + ec.message());
                          std::string why;
                          const auto hs = wire::decode_handshake(attempt->reply, &why);
                          if (hs && (hs->rank != peer || hs->size != options_.size || hs->target != options_.rank)) {
                            why = "answered as rank " + std::to_string(hs->rank) + " of " + std::to_string(hs->size);
                          }
                          if (!why.empty()) {
                            fabric_log().warn("asio rank {}: bad handshake reply from rank {} ({}): {}", options_.rank,
                                              peer, links_[peer]->host(), why);
                            return retry(why);
                          }
                          if (links_[peer]->connected() || links_[peer]->failed()) return;
                          set_socket_options(attempt->socket);
                          links_[peer]->attach(std::make_unique<tcp::socket>(std::move(attempt->socket)));
                          on_connected(peer);
                        });
                  });
            });
      });
}

void AsioTransport::on_connected(int peer) {
  fabric_log().debug("asio rank {}: connected to rank {} ({})", options_.rank, peer, links_[peer]->host());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++connected_;
  }
  connected_cv_.notify_all();
}

void AsioTransport::connect(const std::vector<PeerInfo>& peers) {
  if (static_cast<int>(peers.size()) != options_.size) {
    throw FabricError("asio: connect got " + std::to_string(peers.size()) + " peers for a group of size " +
                      std::to_string(options_.size));
  }
  for (int r = 0; r < options_.size; ++r) {
    if (peers[r].rank != r)
      throw FabricError("asio: connect: peers[" + std::to_string(r) + "] has rank " + std::to_string(peers[r].rank));
  }
  // Lower ranks dial higher ones; each side waits for size-1 links.
  net::post(io_, [this, peers] {
    for (int r = 0; r < options_.size; ++r) {
      if (r == options_.rank) continue;
      if (!peers[r].host.empty()) links_[r]->set_host(peers[r].host);
      if (r > options_.rank) {
        auto [host, port] = split_address(peers[r].address);
        if (peers[r].host.empty()) links_[r]->set_host(host);
        dial(r, host, port);
      }
    }
  });
  const auto deadline = Clock::now() + options_.connect_timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  if (connected_cv_.wait_until(lock, deadline, [this] { return connected_ >= options_.size - 1; })) return;
  lock.unlock();
  // Give up: stop dialing and fail the links still missing, on the io thread.
  std::promise<std::string> missing_promise;
  auto missing_future = missing_promise.get_future();
  net::post(io_, [this, &missing_promise] {
    dialing_stopped_ = true;
    std::string missing;
    for (auto& link : links_) {
      if (link->connected() || link->failed()) continue;
      if (!missing.empty()) missing += ", ";
      missing += "rank " + std::to_string(link->rank()) + " (" + link->host() + ")";
      link->fail(
          std::make_exception_ptr(PeerError(link->rank(), link->host(), "not connected within the connect timeout")));
    }
    missing_promise.set_value(missing);
  });
  const std::string missing = missing_future.get();
  if (missing.empty()) return;  // the last link came up meanwhile
  throw FabricError("asio rank " + std::to_string(options_.rank) + ": connect timed out after " +
                    std::to_string(options_.connect_timeout.count()) + " ms; still missing " + missing);
}

// ---- data --------------------------------------------------------------------

RequestPtr AsioTransport::isend(int peer, Tag tag, const void* data, std::size_t bytes) {
  check_peer(peer, "isend");
  auto request = std::make_shared<Request>(Request::Kind::kSend, peer, tag);
  net::post(io_, [this, request, peer, data, bytes] { links_[peer]->post_send(request, data, bytes); });
  return request;
}

RequestPtr AsioTransport::irecv(int peer, Tag tag, void* data, std::size_t capacity) {
  check_peer(peer, "irecv");
  auto request = std::make_shared<Request>(Request::Kind::kRecv, peer, tag);
  net::post(io_, [this, request, peer, data, capacity] { links_[peer]->post_recv(request, data, capacity); });
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
