#include "fabric/asio/wire.h"

#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace murmur::fabric::asio::wire {
namespace {

constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t kP3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t kP4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t kP5 = 0x27D4EB2F165667C5ULL;

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

std::uint64_t round(std::uint64_t acc, std::uint64_t input) {
  acc += input * kP2;
  acc = std::rotl(acc, 31);
  return acc * kP1;
}
std::uint64_t merge(std::uint64_t acc, std::uint64_t lane) {
  acc ^= round(0, lane);
  return acc * kP1 + kP4;
}

// Long inputs: eight 64-bit lanes fed 64 bytes at a time in the manner of
// XXH3's accumulate step (one 32x32->64 multiply per 8 bytes, the word itself
// added to the neighbour lane so no input bit is lost to a zero product),
// scrambled every 1 KiB, folded into xxh64 of the tail. Not bit-compatible with
// XXH3; independent lanes let the compiler vectorize it.
constexpr std::size_t kLanes = 8;
constexpr std::size_t kStripe = kLanes * 8;
constexpr std::size_t kBlockStripes = 16;
constexpr std::uint64_t kKey[kLanes] = {0xbe4ba423396cfeb8ULL, 0x1cad21f72c81017cULL, 0xdb979083e96dd4deULL,
                                        0x1f67b3b7a4a44072ULL, 0x78e5c0cc4ee679cbULL, 0x2172ffcc7dd05a82ULL,
                                        0x8e2443f7744608b8ULL, 0x4c263a81e69035e0ULL};

std::uint64_t xxh64(const unsigned char* p, std::size_t bytes, std::uint64_t seed);

// Stripes of 64 bytes into acc[8]; returns the number of bytes consumed.
#if defined(__SSE2__)
std::size_t accumulate(std::uint64_t* acc, const unsigned char* p, std::size_t bytes, std::uint64_t seed) {
  __m128i a[4], key[4], scramble_key[4];
  for (int j = 0; j < 4; ++j) {
    a[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + 2 * j));
    scramble_key[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kKey + 2 * j));
    key[j] = _mm_add_epi64(scramble_key[j], _mm_set1_epi64x(static_cast<long long>(seed)));
  }
  const __m128i prime = _mm_set1_epi64x(0x9E3779B1LL);
  const std::size_t stripes = bytes / kStripe;
  for (std::size_t s = 0; s < stripes; ++s, p += kStripe) {
    for (int j = 0; j < 4; ++j) {
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * j));
      const __m128i k = _mm_xor_si128(d, key[j]);
      const __m128i product = _mm_mul_epu32(k, _mm_srli_epi64(k, 32));
      const __m128i swapped = _mm_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2));
      a[j] = _mm_add_epi64(a[j], _mm_add_epi64(swapped, product));
    }
    if ((s + 1) % kBlockStripes == 0) {
      for (int j = 0; j < 4; ++j) {
        const __m128i x = _mm_xor_si128(_mm_xor_si128(a[j], _mm_srli_epi64(a[j], 47)), scramble_key[j]);
        const __m128i lo = _mm_mul_epu32(x, prime);
        const __m128i hi = _mm_slli_epi64(_mm_mul_epu32(_mm_srli_epi64(x, 32), prime), 32);
        a[j] = _mm_add_epi64(lo, hi);
      }
    }
  }
  for (int j = 0; j < 4; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + 2 * j), a[j]);
  return stripes * kStripe;
}
#else
// Portable twin of the SSE2 body above; both give the same result.
std::size_t accumulate(std::uint64_t* acc, const unsigned char* p, std::size_t bytes, std::uint64_t seed) {
  const std::size_t stripes = bytes / kStripe;
  for (std::size_t s = 0; s < stripes; ++s, p += kStripe) {
    for (std::size_t i = 0; i < kLanes; ++i) {
      const std::uint64_t v = load64(p + 8 * i);
      const std::uint64_t k = v ^ (kKey[i] + seed);
      acc[i ^ 1] += v;
      acc[i] += (k & 0xffffffffULL) * (k >> 32);
    }
    if ((s + 1) % kBlockStripes == 0) {
      for (std::size_t i = 0; i < kLanes; ++i) acc[i] = ((acc[i] ^ (acc[i] >> 47)) ^ kKey[i]) * 0x9E3779B1ULL;
    }
  }
  return stripes * kStripe;
}
#endif

std::uint64_t striped_hash(const unsigned char* p, std::size_t bytes, std::uint64_t seed) {
  std::uint64_t acc[kLanes] = {kP3, kP1, kP2, kP4, kP5, kP3 ^ kP1, kP2 ^ kP4, kP5 ^ kP1};
  const std::size_t done = accumulate(acc, p, bytes, seed);
  std::uint64_t h = xxh64(p + done, bytes - done, seed) ^ (bytes * kP1);
  for (std::size_t i = 0; i < kLanes; ++i) h = merge(h, acc[i]);
  return h;
}

std::uint64_t xxh64(const unsigned char* p, std::size_t bytes, std::uint64_t seed) {
  const unsigned char* const end = p + bytes;
  std::uint64_t h;
  if (bytes >= 32) {
    std::uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    const unsigned char* const limit = end - 32;
    do {
      v1 = round(v1, load64(p));
      v2 = round(v2, load64(p + 8));
      v3 = round(v3, load64(p + 16));
      v4 = round(v4, load64(p + 24));
      p += 32;
    } while (p <= limit);
    h = std::rotl(v1, 1) + std::rotl(v2, 7) + std::rotl(v3, 12) + std::rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = seed + kP5;
  }
  h += bytes;
  for (; p + 8 <= end; p += 8) h = std::rotl(h ^ round(0, load64(p)), 27) * kP1 + kP4;
  if (p + 4 <= end) {
    h = std::rotl(h ^ (std::uint64_t{load32(p)} * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) h = std::rotl(h ^ (*p * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

}  // namespace

std::uint64_t hash64(const void* data, std::size_t bytes, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  return bytes < 256 ? xxh64(p, bytes, seed) : striped_hash(p, bytes, seed);
}

FrameBytes encode_frame(const FrameHeader& header) {
  FrameBytes b{};
  store32(&b[0], kFrameMagic);
  store16(&b[4], kVersion);
  store16(&b[6], 0);
  store64(&b[8], header.tag);
  store64(&b[16], header.total);
  store64(&b[24], header.offset);
  store64(&b[32], header.chunk);
  store64(&b[40], header.payload_hash);
  store64(&b[48], hash64(b.data(), 48));
  return b;
}

std::optional<FrameHeader> decode_frame(const FrameBytes& b, std::string* error) {
  auto bad = [&](std::string why) {
    *error = std::move(why);
    return std::nullopt;
  };
  if (load32(&b[0]) != kFrameMagic) return bad("bad frame magic " + std::to_string(load32(&b[0])));
  if (load16(&b[4]) != kVersion) {
    return bad("unsupported wire version " + std::to_string(load16(&b[4])) + " (this side speaks " +
               std::to_string(kVersion) + ")");
  }
  if (load64(&b[48]) != hash64(b.data(), 48)) return bad("frame header checksum mismatch");
  FrameHeader h;
  h.tag = load64(&b[8]);
  h.total = load64(&b[16]);
  h.offset = load64(&b[24]);
  h.chunk = load64(&b[32]);
  h.payload_hash = load64(&b[40]);
  if (h.total > kMaxMessageBytes) return bad("message size " + std::to_string(h.total) + " exceeds the limit");
  if (h.chunk > kMaxChunkBytes) return bad("chunk size " + std::to_string(h.chunk) + " exceeds the limit");
  if (h.offset > h.total || h.chunk > h.total - h.offset) {
    return bad("chunk [" + std::to_string(h.offset) + ", +" + std::to_string(h.chunk) +
               ") lies outside a message of " + std::to_string(h.total) + " bytes");
  }
  if (h.chunk == 0 && h.total != 0) return bad("empty chunk in a non-empty message");
  return h;
}

HandshakeBytes encode_handshake(const Handshake& hs) {
  HandshakeBytes b{};
  store32(&b[0], kHandshakeMagic);
  store16(&b[4], kVersion);
  store16(&b[6], 0);
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
    *error = "unsupported handshake version " + std::to_string(load16(&b[4]));
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
  return hs;
}

}  // namespace murmur::fabric::asio::wire
