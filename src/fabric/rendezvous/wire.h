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

inline constexpr std::uint32_t kProtocolVersion = 1;
inline constexpr std::size_t kPrefixBytes = 4;

struct Hello {
  std::uint32_t version = kProtocolVersion;
  std::string token;
  int rank = 0;
  int size = 1;
  std::string host;
};

enum class Op { set, get, wait, barrier, members, heartbeat, leave, gather };
const char* op_name(Op op);

struct Request {
  std::uint64_t id = 0;
  Op op = Op::heartbeat;
  std::string key;               // set, get, wait, barrier (its name), gather (the prefix)
  std::string value;             // set
  std::uint64_t timeout_ms = 0;  // wait, barrier, gather
  std::uint32_t count = 0;       // gather
};

struct Welcome {
  bool ok = true;
  std::string refused;  // the reason when !ok
};

struct Response {
  enum class Kind { ok, value, not_found, error, members, values };
  std::uint64_t id = 0;
  Kind kind = Kind::ok;
  std::string text;  // the value, or the error
  std::vector<Member> members;
  std::vector<std::string> values;  // gather
};

using ClientMessage = std::variant<Hello, Request>;
using ServerMessage = std::variant<Welcome, Response, MemberLost>;

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
