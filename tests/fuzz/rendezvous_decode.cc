// Harness: the rendezvous protocol's Cap'n Proto decoders
// (fabric/rendezvous/wire.h) on a frame body from the network.
// Input: u8 mode (bit 0: a server's message, else a client's), then the
// body (whole 8-byte words; a trailing part word is dropped, as
// Connection::read_frame refuses it). A body must decode or throw
// DecodeError; what decodes must encode and decode again.
#include <cstring>
#include <vector>

#include "fabric/rendezvous/wire.h"
#include "fuzz_target.h"

namespace wire = murmur::fabric::rendezvous::wire;

namespace {

constexpr std::size_t kMaxBytes = 1 << 20;  // ServerOptions::max_message_bytes' default

std::vector<std::uint64_t> body_of(const std::vector<std::byte>& frame) {
  std::vector<std::uint64_t> body((frame.size() - wire::kPrefixBytes) / 8);
  std::memcpy(body.data(), frame.data() + wire::kPrefixBytes, 8 * body.size());
  return body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::FuzzInput input(data, size);
  const bool server = input.take<std::uint8_t>() & 1;
  const auto rest = input.rest();
  std::vector<std::uint64_t> body(rest.size() / 8);
  if (!body.empty()) std::memcpy(body.data(), rest.data(), 8 * body.size());
  try {
    if (server) {
      const auto message = wire::decode_server(body, kMaxBytes);
      (void)wire::decode_server(body_of(wire::encode(message)), kMaxBytes);
    } else {
      const auto message = wire::decode_client(body, kMaxBytes);
      (void)wire::decode_client(body_of(wire::encode(message)), kMaxBytes);
    }
  } catch (const wire::DecodeError&) {
  }
  return 0;
}
