// Wire format of the asio backend: what travels on one TCP connection.
//
// Handshake (once per connection, both directions, 24 bytes little-endian):
//   magic u32 "MRMH" | version u16 | flags u16 | rank i32 | size i32 |
//   target i32 | check u32 (low half of hash64 of the 20 bytes before it)
// The dialer sends first; the acceptor answers only if it accepts. Flag
// kHandshakeProvesToken: the sender has a job token, and the proofs of
// auth.h follow the handshakes. Flag kHandshakeWantsPayloadChecksum: the
// sender wants this link's frames to carry payload checksums; they go
// without only if neither side wants them (Link::attach).
//
// Data: a message is one or more frames, sent back to back on the connection
// (frames of different messages never interleave on one connection; traffic to
// different peers interleaves because each peer has its own socket). A frame is
// a 56-byte little-endian header followed by `chunk` payload bytes:
//   magic u32 "MRMF" | version u16 | flags u16 | tag u64 | total u64 |
//   offset u64 | chunk u64 | payload_hash u64 | header_hash u64
// Every frame carries its own payload hash (checksum_payload of its chunk),
// so the receiver checks each chunk right after it lands, and a sender never
// needs a pass over the whole message before the first byte leaves; except
// on a link that stays within the host (TransportOptions::
// asio_payload_checksum), where flag kFramePayloadUnchecked is set and the
// hash is 0. A receiver refuses such a frame on a link it checks.
// header_hash (hash64) covers the 48 bytes before it, so lengths and offsets
// are trusted only once it matches.
//
// Everything here is pure and thread-compatible.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fabric/send_pieces.h"

namespace murmur::fabric::asio::wire {

inline constexpr std::uint32_t kFrameMagic = 0x464d524d;      // "MRMF"
inline constexpr std::uint32_t kHandshakeMagic = 0x484d524d;  // "MRMH"
// 4: frame flag kFramePayloadUnchecked (3 had no frame flags) and
// handshake flag kHandshakeWantsPayloadChecksum; 3: the
// payload hash is XXH3-64 (2: XXH64, which was 18% of the asio bandwidth
// benchmark's samples; 1 used a hand-written hash for 256 bytes and more).
// Headers and handshakes keep XXH64.
inline constexpr std::uint16_t kVersion = 4;
inline constexpr std::size_t kFrameHeaderBytes = 56;
inline constexpr std::size_t kHandshakeBytes = 24;
inline constexpr std::uint16_t kHandshakeProvesToken = 1;           // handshake flag
inline constexpr std::uint16_t kHandshakeWantsPayloadChecksum = 2;  // handshake flag
inline constexpr std::uint16_t kFramePayloadUnchecked = 1;          // frame flag
// Limits on what a peer may announce (its chunk_bytes may differ from ours).
inline constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{1} << 30;
inline constexpr std::uint64_t kMaxMessageBytes = std::uint64_t{1} << 40;

// 64-bit non-cryptographic checksum: XXH64 from libxxhash, the same value
// as xxHash's reference and `xxhsum -H64` (seed 0) on every host.
std::uint64_t hash64(const void* data, std::size_t bytes, std::uint64_t seed = 0);

// The payload checksum: XXH3-64 (seed 0) from libxxhash, through its x86
// dispatcher where there is one (AVX2 / AVX-512 when the CPU has them; the
// value is the same on every path and host). 2-3x faster than XXH64 here
// (13-15 against 5-6 GB/s over 256 KiB). It guards against corruption TCP's
// own checksum misses and against framing bugs; it is not a MAC
// (docs/security.md).
std::uint64_t checksum_payload(const void* data, std::size_t bytes);
// The same over message bytes [offset, offset + bytes) of a gathered send.
std::uint64_t checksum_payload(const SendPieces& pieces, std::size_t offset, std::size_t bytes);

struct FrameHeader {
  std::uint64_t tag = 0;
  std::uint64_t total = 0;   // size of the whole message
  std::uint64_t offset = 0;  // of this chunk within the message
  std::uint64_t chunk = 0;   // payload bytes that follow this header
  std::uint64_t payload_hash = 0;
  bool payload_checked = true;  // false: flag kFramePayloadUnchecked, payload_hash 0
};

using FrameBytes = std::array<unsigned char, kFrameHeaderBytes>;
using HandshakeBytes = std::array<unsigned char, kHandshakeBytes>;

FrameBytes encode_frame(const FrameHeader& header);
// Checks magic, version, flags, header hash and the size limits; on failure returns
// nullopt and says why in *error.
std::optional<FrameHeader> decode_frame(const FrameBytes& bytes, std::string* error);

struct Handshake {
  int rank = -1;
  int size = 0;
  int target = -1;                     // the rank the sender believes it is talking to
  bool proves_token = false;           // flag kHandshakeProvesToken
  bool wants_payload_checksum = true;  // flag kHandshakeWantsPayloadChecksum
};

HandshakeBytes encode_handshake(const Handshake& handshake);
std::optional<Handshake> decode_handshake(const HandshakeBytes& bytes, std::string* error);

}  // namespace murmur::fabric::asio::wire
