// The server's view of one connection: who it is once it said Hello, when it
// was last heard from, and the watchdog timer that drops it when silent.
// Io thread only. Its destructor touches nothing but its own members, so the
// server may drop sessions in any order at shutdown.
#pragma once

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "fabric/rendezvous/connection.h"

namespace murmur::fabric::rendezvous {

struct Session {
  using Clock = std::chrono::steady_clock;

  explicit Session(std::shared_ptr<Connection> connection)
      : conn(std::move(connection)), watchdog(conn->socket().get_executor()), last_seen(Clock::now()) {}

  // "127.0.0.1:40112" before Hello, "127.0.0.1:40112 (rank 3, host node7)" after.
  std::string who() const {
    if (!joined) return conn->remote();
    return conn->remote() + " (rank " + std::to_string(rank) + ", host " + host + ")";
  }

  std::shared_ptr<Connection> conn;
  boost::asio::steady_timer watchdog;
  Clock::time_point last_seen;
  bool joined = false;        // said a Hello that was accepted
  bool gone = false;          // left, lost, refused or closed: ignore whatever follows
  bool member = false;        // joined and in the current view (a rejoin may be neither)
  bool pending_join = false;  // a joiner with an assigned id, not admitted yet
  int rank = -1;
  std::string host;
  std::string challenge;  // the nonce this connection's Hello must prove (job token); "" before it is sent
};

}  // namespace murmur::fabric::rendezvous
