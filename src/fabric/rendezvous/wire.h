// Plain C++ mirrors of rendezvous.capnp's messages, and their encoding as
// frames (4-byte little-endian length prefix + flat-array capnp message).
// Internal: keeps Cap'n Proto out of the server, the client and the tests.
//
// decode_*() reads an untrusted frame body under bounded ReaderOptions and
// turns every capnp/kj failure into DecodeError; nothing of the input is
// referenced after it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "fabric/rendezvous/client.h"

namespace murmur::fabric::rendezvous::wire {

inline constexpr std::uint32_t kProtocolVersion = 4;
inline constexpr std::size_t kPrefixBytes = 4;

struct Hello {
  std::uint32_t version = kProtocolVersion;
  std::string token;
  int rank = 0;
  int size = 1;
  std::string host;
  bool rejoin = false;  // failover: the fields below are the member's last view
  std::uint64_t generation = 0;
  std::vector<Member> members;
  bool join = false;      // asks to join a running job (rank -1)
  std::string signature;  // the job signature, "key=value;key=value"
  std::string proof;      // of the job token over the server's Challenge (rendezvous.capnp)
  std::string nonce;      // for the server's proof (rendezvous.capnp)
};

enum class Op { set, get, wait, barrier, members, heartbeat, leave, gather, suspect, admit };
const char* op_name(Op op);

struct Request {
  std::uint64_t id = 0;
  Op op = Op::heartbeat;
  std::string key;                                // set, get, wait, barrier (its name), gather (the prefix)
  std::string value;                              // set
  std::uint64_t timeout_ms = 0;                   // wait, barrier, gather
  std::uint32_t count = 0;                        // gather
  std::string retire;                             // gather: keys under it erased once answered (rendezvous.capnp)
  int rank = -1;                                  // suspect: whom
  Evidence evidence = Evidence::kTransportError;  // suspect; `key` holds the reason
};

// Heartbeats with this id are answered (ok), so that a client notices a
// server that accepts but no longer serves.
inline constexpr std::uint64_t kHeartbeatEchoId = ~std::uint64_t{0};

struct Welcome {
  bool ok = true;
  std::string refused;  // the reason when !ok
  int rank = -1;        // the sender's member id (assigned, for a joiner)
  int size = 0;         // the job's original world size
};

struct Response {
  enum class Kind { ok, value, not_found, error, members, values, verdict };
  std::uint64_t id = 0;
  Kind kind = Kind::ok;
  std::string text;  // the value, or the error
  std::vector<Member> members;
  std::vector<std::string> values;                        // gather
  SuspectVerdict verdict = SuspectVerdict::kUnreachable;  // suspect (never kUnreachable on the wire)
};

struct ViewChanged {
  View view;  // view.joined: who was admitted in this change
  std::vector<MemberLost> lost;
};

struct JoinRefused {
  std::string host;  // the joiner's
  std::string reason;
};

using ClientMessage = std::variant<Hello, Request>;
// A server with a job token asks the client to prove it (rendezvous.capnp).
struct Challenge {
  std::string nonce;
  std::string proof;  // the server's, over the Hello's nonce
};

using ServerMessage = std::variant<Welcome, Response, MemberLost, ViewChanged, JoinRefused, Challenge>;

class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A whole frame, prefix included, ready to write.
std::vector<std::byte> encode(const ClientMessage& message);
std::vector<std::byte> encode(const ServerMessage& message);

// `body` is the frame without its prefix, as 8-byte words (so it is aligned).
// `max_bytes` bounds how much the reader may traverse.
ClientMessage decode_client(std::span<const std::uint64_t> body, std::size_t max_bytes);
ServerMessage decode_server(std::span<const std::uint64_t> body, std::size_t max_bytes);

}  // namespace murmur::fabric::rendezvous::wire
