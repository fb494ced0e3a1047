// A member's connection to the rendezvous server (server.h).
//
// Threads: every method is thread-safe. The client owns one io thread, which
// reads the server's answers and pushes, sends a heartbeat every
// heartbeat_interval (timers, no polling) and runs the on_member_lost
// callback. Calls block the calling thread until the server answers (or the
// stated timeout passes); none of them may be made from the callback.
//
// Failures: a refusal, a timeout or a lost server connection throws
// FabricError (fabric/errors.h) with a message that says what happened. Once
// the server connection is lost, the callback is told with rank -1 and every
// pending and later call throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace murmur::fabric::rendezvous {

struct Member {
  int rank;
  std::string host;
};

// rank -1 means the connection to the rendezvous server itself was lost; host
// then names the server.
struct MemberLost {
  int rank;
  std::string host;
  std::string reason;
  bool left_cleanly;
};

struct ClientOptions {
  std::string server_host = "127.0.0.1";
  std::uint16_t server_port = 0;
  std::string token;
  int rank = 0;
  int size = 1;
  std::string self_host;
  std::chrono::milliseconds heartbeat_interval{1000};
  // Connecting is retried until then (the server may start later).
  std::chrono::milliseconds connect_timeout{30000};
  // How long set/get/members/leave wait for an answer; wait() and barrier()
  // wait their own timeout plus this much before giving up on the server.
  std::chrono::milliseconds request_timeout{30000};
  std::size_t max_message_bytes = 1 << 26;  // largest server message accepted
};

class Client final {
 public:
  // Connects (retrying until connect_timeout) and says Hello. Throws
  // FabricError with the server's reason on refusal ("cluster token
  // mismatch", "rank 3 already joined from host X", "world size 4 differs
  // from 8") or on timeout.
  explicit Client(ClientOptions options);
  // leave()s if not done yet, then stops the io thread. Never throws.
  ~Client();

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // value: arbitrary bytes.
  void set(const std::string& key, const std::string& value);
  std::optional<std::string> get(const std::string& key);
  // Blocks until the key is set. Throws FabricError naming the key on timeout.
  std::string wait(const std::string& key, std::chrono::milliseconds timeout);
  // The values of prefix + "0" .. prefix + (count - 1), in that order, in
  // one reply once all are set: a collective's one key per rank without a
  // round trip per key. Throws FabricError on timeout (naming the missing
  // indices) or for a count past 16 x the world size.
  std::vector<std::string> gather(const std::string& prefix, std::uint32_t count, std::chrono::milliseconds timeout);
  // Blocks until all `size` ranks reached the barrier `name`. Throws
  // FabricError on timeout (naming the ranks still missing) or when a member
  // is lost or leaves while waiting.
  void barrier(const std::string& name, std::chrono::milliseconds timeout);
  // The members currently joined, sorted by rank.
  std::vector<Member> members();
  // Replaces the callback. It runs on the client's io thread and must not
  // block (in particular it must not call this client's methods).
  void on_member_lost(std::function<void(const MemberLost&)> callback);
  // Clean goodbye: the others see left_cleanly = true. Idempotent; later
  // calls other than leave() throw.
  void leave();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace murmur::fabric::rendezvous
