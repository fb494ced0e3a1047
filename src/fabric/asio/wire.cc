#include "fabric/asio/wire.h"

#include <bit>
#include <cstring>

#include <fmt/format.h>
// For XXH3_state_t's definition: the streaming state lives on the stack.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xxh_x86dispatch.h>
#define MURMUR_XXH3_64 XXH3_64bits_dispatch
#define MURMUR_XXH3_64_UPDATE XXH3_64bits_update_dispatch
#else
#define MURMUR_XXH3_64 XXH3_64bits
#define MURMUR_XXH3_64_UPDATE XXH3_64bits_update
#endif

namespace murmur::fabric::asio::wire {
namespace {

std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
std::uint32_t load32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}
std::uint16_t load16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
void store64(unsigned char* p, std::uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
void store32(unsigned char* p, std::uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
void store16(unsigned char* p, std::uint16_t v) {
  p[0] = static_cast<unsigned char>(v);
  p[1] = static_cast<unsigned char>(v >> 8);
}

}  // namespace

std::uint64_t hash64(const void* data, std::size_t bytes, std::uint64_t seed) { return XXH64(data, bytes, seed); }

std::uint64_t checksum_payload(const void* data, std::size_t bytes) { return MURMUR_XXH3_64(data, bytes); }

std::uint64_t checksum_payload(const SendPieces& pieces, std::size_t offset, std::size_t bytes) {
  if (pieces.count_in(offset, bytes) <= 1) {
    const std::byte* start = nullptr;
    pieces.visit(offset, bytes, [&](std::size_t, const std::byte* data, std::size_t) { start = data; });
    return checksum_payload(start, bytes);
  }
  // XXH3's streaming form gives the one-shot value of the concatenation.
  // On the stack: no allocation, nothing to fail on the io thread.
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  pieces.visit(offset, bytes, [&](std::size_t, const std::byte* data, std::size_t length) {
    MURMUR_XXH3_64_UPDATE(&state, data, length);
  });
  return XXH3_64bits_digest(&state);
}

FrameBytes encode_frame(const FrameHeader& header) {
  FrameBytes b{};
  store32(&b[0], kFrameMagic);
  store16(&b[4], kVersion);
  store16(&b[6], header.payload_checked ? 0 : kFramePayloadUnchecked);
  store64(&b[8], header.tag);
  store64(&b[16], header.total);
  store64(&b[24], header.offset);
  store64(&b[32], header.chunk);
  store64(&b[40], header.payload_checked ? header.payload_hash : 0);
  store64(&b[48], hash64(b.data(), 48));
  return b;
}

std::optional<FrameHeader> decode_frame(const FrameBytes& b, std::string* error) {
  auto bad = [&](std::string why) {
    *error = std::move(why);
    return std::nullopt;
  };
  if (load32(&b[0]) != kFrameMagic) return bad(fmt::format("bad frame magic {}", load32(&b[0])));
  if (load16(&b[4]) != kVersion) {
    return bad(fmt::format("unsupported wire version {} (this side speaks {})", load16(&b[4]), kVersion));
  }
  if (load64(&b[48]) != hash64(b.data(), 48)) return bad("frame header checksum mismatch");
  const std::uint16_t flags = load16(&b[6]);
  if ((flags & ~kFramePayloadUnchecked) != 0) return bad(fmt::format("unknown frame flags {:#x}", flags));
  FrameHeader h;
  h.payload_checked = (flags & kFramePayloadUnchecked) == 0;
  h.tag = load64(&b[8]);
  h.total = load64(&b[16]);
  h.offset = load64(&b[24]);
  h.chunk = load64(&b[32]);
  h.payload_hash = load64(&b[40]);
  if (!h.payload_checked && h.payload_hash != 0) return bad("a frame without a payload checksum carries a hash");
  if (h.total > kMaxMessageBytes) return bad(fmt::format("message size {} exceeds the limit", h.total));
  if (h.chunk > kMaxChunkBytes) return bad(fmt::format("chunk size {} exceeds the limit", h.chunk));
  if (h.offset > h.total || h.chunk > h.total - h.offset) {
    return bad(fmt::format("chunk [{}, +{}) lies outside a message of {} bytes", h.offset, h.chunk, h.total));
  }
  if (h.chunk == 0 && h.total != 0) return bad("empty chunk in a non-empty message");
  return h;
}

HandshakeBytes encode_handshake(const Handshake& hs) {
  HandshakeBytes b{};
  store32(&b[0], kHandshakeMagic);
  store16(&b[4], kVersion);
  store16(&b[6], static_cast<std::uint16_t>((hs.proves_token ? kHandshakeProvesToken : 0) |
                                            (hs.wants_payload_checksum ? kHandshakeWantsPayloadChecksum : 0)));
  store32(&b[8], static_cast<std::uint32_t>(hs.rank));
  store32(&b[12], static_cast<std::uint32_t>(hs.size));
  store32(&b[16], static_cast<std::uint32_t>(hs.target));
  store32(&b[20], static_cast<std::uint32_t>(hash64(b.data(), 20)));
  return b;
}

std::optional<Handshake> decode_handshake(const HandshakeBytes& b, std::string* error) {
  if (load32(&b[0]) != kHandshakeMagic) {
    *error = "bad handshake magic";
    return std::nullopt;
  }
  if (load16(&b[4]) != kVersion) {
    *error = fmt::format("unsupported handshake version {}", load16(&b[4]));
    return std::nullopt;
  }
  if (load32(&b[20]) != static_cast<std::uint32_t>(hash64(b.data(), 20))) {
    *error = "handshake checksum mismatch";
    return std::nullopt;
  }
  Handshake hs;
  hs.rank = static_cast<int>(load32(&b[8]));
  hs.size = static_cast<int>(load32(&b[12]));
  hs.target = static_cast<int>(load32(&b[16]));
  hs.proves_token = (load16(&b[6]) & kHandshakeProvesToken) != 0;
  hs.wants_payload_checksum = (load16(&b[6]) & kHandshakeWantsPayloadChecksum) != 0;
  return hs;
}

}  // namespace murmur::fabric::asio::wire
