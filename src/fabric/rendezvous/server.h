// The rendezvous server: the control plane's meeting point. Members connect,
// authenticate with the cluster token (Hello), then use a key/value store,
// named barriers and a membership list (see client.h for the calls), and
// heartbeat. A member whose connection closes without a leave, or that sends
// nothing for heartbeat_timeout, is declared lost: every other member gets a
// MemberLost push, and pending barriers fail.
//
// Threads: the server serves on one thread of its own (one io_context); the
// constructor returns once it listens. All methods are thread-safe.
// The key/value store belongs to the job: when the last member leaves or is
// lost, its keys are dropped, so one server can host one job after another.
// Malformed, oversized or unauthenticated input closes that one connection,
// is logged (warn, naming the remote endpoint and rank when known) and counted
// in rejected_count(); the server keeps serving everyone else.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace murmur::fabric::rendezvous {

struct ServerOptions {
  std::string bind_host = "0.0.0.0";
  std::uint16_t port = 0;  // 0: ephemeral (see Server::port())
  std::string token;       // cluster token; must match the client's
  std::chrono::milliseconds heartbeat_timeout{5000};
  std::size_t max_message_bytes = 1 << 20;
  // A connection that has not said Hello within this time is dropped.
  std::chrono::milliseconds hello_timeout{10000};
};

class Server final {
 public:
  // Binds and starts serving. Throws FabricError naming host:port and the
  // reason if it cannot resolve or bind.
  explicit Server(ServerOptions options);
  // Stops serving, closes every connection and joins the thread. Never throws.
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port actually bound (useful with port 0).
  std::uint16_t port() const;
  // Connections and messages refused so far (bad framing, bad token,
  // duplicate rank, requests before Hello, ...).
  std::size_t rejected_count() const;
  // Members joined now (ranks that said Hello and have not left or been lost).
  std::size_t member_count() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace murmur::fabric::rendezvous
