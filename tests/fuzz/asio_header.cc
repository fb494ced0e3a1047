// Harness: the asio backend's frame header and handshake decoders
// (fabric/asio/wire.h) on 56 or 24 bytes from a socket.
// Input: u8 mode, then the bytes (zero-padded). Mode bit 0 recomputes the
// checksum first, so that the fuzzer reaches the checks behind it. A header
// that decodes must describe a chunk inside its message, within the limits,
// and encode back to the same fields.
#include <algorithm>
#include <cstring>

#include "fabric/asio/wire.h"
#include "fuzz_target.h"

namespace wire = murmur::fabric::asio::wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::FuzzInput input(data, size);
  const bool fix_checksum = input.take<std::uint8_t>() & 1;
  const auto rest = input.rest();

  wire::FrameBytes frame{};
  std::memcpy(frame.data(), rest.data(), std::min(rest.size(), frame.size()));
  if (fix_checksum) {
    const std::uint64_t hash = wire::hash64(frame.data(), 48);
    std::memcpy(&frame[48], &hash, 8);
  }
  std::string why;
  if (const auto h = wire::decode_frame(frame, &why)) {
    if (h->total > wire::kMaxMessageBytes || h->chunk > wire::kMaxChunkBytes) murmur::fuzz::fail("limit not checked");
    if (h->offset > h->total || h->chunk > h->total - h->offset) murmur::fuzz::fail("chunk outside its message");
    // The fields re-encode to the same bytes (flags, 6..8, are not read).
    const auto again = wire::encode_frame(*h);
    if (std::memcmp(again.data(), frame.data(), 6) != 0 || std::memcmp(&again[8], &frame[8], 40) != 0)
      murmur::fuzz::fail("frame header does not re-encode to its fields");
  } else if (why.empty()) {
    murmur::fuzz::fail("frame refused without a reason");
  }

  wire::HandshakeBytes handshake{};
  std::memcpy(handshake.data(), rest.data(), std::min(rest.size(), handshake.size()));
  if (fix_checksum) {
    const auto hash = static_cast<std::uint32_t>(wire::hash64(handshake.data(), 20));
    std::memcpy(&handshake[20], &hash, 4);
  }
  why.clear();
  if (!wire::decode_handshake(handshake, &why) && why.empty()) murmur::fuzz::fail("handshake refused without a reason");
  return 0;
}
