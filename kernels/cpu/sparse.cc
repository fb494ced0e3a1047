// Sparse vectors: random-k index sets, gather/scatter, index encodings.
#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/compress.h"
#include "kernels/rng.h"

namespace murmur::kernels::cpu {

Status randk_indices(void* scratch, std::size_t& scratch_bytes, std::size_t n, std::size_t k, std::uint64_t seed,
                     std::uint32_t* idx) {
  const std::size_t words = (n + 63) / 64;
  if (scratch == nullptr) {
    scratch_bytes = words * 8;
    return Status::kOk;
  }
  if (scratch_bytes < words * 8) return Status::kScratchTooSmall;
  if (k > n || n >= (std::size_t(1) << 32)) return Status::kInvalidArgument;
  auto* bits = static_cast<std::uint64_t*>(scratch);
  std::memset(bits, 0, words * 8);
  const std::uint32_t key = seed_key(seed);
  // Floyd: for j in [n-k, n), draw t in [0, j]; take t, or j if t is taken.
  for (std::size_t j = n - k; j < n; ++j) {
    const std::size_t t = static_cast<std::size_t>((std::uint64_t(draw_u32(key, std::uint32_t(j))) * (j + 1)) >> 32);
    const std::size_t pick = (bits[t / 64] >> (t % 64)) & 1u ? j : t;
    bits[pick / 64] |= std::uint64_t(1) << (pick % 64);
  }
  std::size_t out = 0;
  for (std::size_t w = 0; w < words; ++w)
    for (std::uint64_t b = bits[w]; b; b &= b - 1)
      idx[out++] = static_cast<std::uint32_t>(w * 64 + std::countr_zero(b));
  return Status::kOk;
}

Status gather(void* scratch, std::size_t& scratch_bytes, const float* in, const std::uint32_t* idx, std::size_t k,
              float* vals) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  for (std::size_t j = 0; j < k; ++j) vals[j] = in[idx[j]];
  return Status::kOk;
}

Status scatter(void* scratch, std::size_t& scratch_bytes, const std::uint32_t* idx, const float* vals, std::size_t k,
               float* out, std::size_t n) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  std::uint32_t max_idx = 0;
  for (std::size_t j = 0; j < k; ++j) max_idx = std::max(max_idx, idx[j]);
  if (k > 0 && max_idx >= n) return Status::kMalformed;
  // fill_n, not memset: `out` is null for an empty tensor, and memset with a
  // null pointer is undefined even for 0 bytes (tests/fuzz/compress_decode).
  std::fill_n(out, n, 0.0f);
  for (std::size_t j = 0; j < k; ++j) out[idx[j]] = vals[j];
  return Status::kOk;
}

namespace {
inline std::size_t varint_len(std::uint32_t v) {
  return 1 + (v >= (1u << 7)) + (v >= (1u << 14)) + (v >= (1u << 21)) + (v >= (1u << 28));
}
}  // namespace

std::size_t delta_varint_bytes(const std::uint32_t* idx, std::size_t k) {
  std::size_t total = 0;
  std::uint32_t prev = 0;
  for (std::size_t j = 0; j < k; ++j) {
    total += varint_len(j == 0 ? idx[0] : idx[j] - prev - 1);
    prev = idx[j];
  }
  return total;
}

std::size_t delta_varint_encode(const std::uint32_t* idx, std::size_t k, std::uint8_t* out) {
  std::uint8_t* p = out;
  std::uint32_t prev = 0;
  for (std::size_t j = 0; j < k; ++j) {
    std::uint32_t v = j == 0 ? idx[0] : idx[j] - prev - 1;
    prev = idx[j];
    while (v >= 0x80) {
      *p++ = static_cast<std::uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<std::uint8_t>(v);
  }
  return static_cast<std::size_t>(p - out);
}

Status delta_varint_decode(const std::uint8_t* in, std::size_t len, std::size_t k, std::size_t n, std::uint32_t* idx,
                           std::size_t* consumed) {
  std::size_t pos = 0;
  std::uint64_t next = 0;  // smallest index the next entry may take
  for (std::size_t j = 0; j < k; ++j) {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= len || shift > 28) return Status::kMalformed;
      const std::uint8_t b = in[pos++];
      v |= std::uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    const std::uint64_t value = next + v;
    if (value >= n) return Status::kMalformed;
    idx[j] = static_cast<std::uint32_t>(value);
    next = value + 1;
  }
  *consumed = pos;
  return Status::kOk;
}

std::size_t bitmap_bytes(std::size_t n) { return (n + 7) / 8; }

void bitmap_encode(const std::uint32_t* idx, std::size_t k, std::size_t n, std::uint8_t* out) {
  std::fill_n(out, bitmap_bytes(n), std::uint8_t{0});  // out may be null when n == 0
  for (std::size_t j = 0; j < k; ++j) out[idx[j] / 8] |= static_cast<std::uint8_t>(1u << (idx[j] % 8));
}

Status bitmap_decode(const std::uint8_t* in, std::size_t n, std::size_t k, std::uint32_t* idx) {
  const std::size_t bytes = bitmap_bytes(n);
  std::size_t count = 0;
  for (std::size_t b = 0; b < bytes; ++b) count += std::popcount(in[b]);
  if (count != k) return Status::kMalformed;
  if (n % 8 && (in[bytes - 1] >> (n % 8))) return Status::kMalformed;
  std::size_t out = 0;
  for (std::size_t b = 0; b < bytes; ++b)
    for (unsigned v = in[b]; v; v &= v - 1) idx[out++] = static_cast<std::uint32_t>(b * 8 + std::countr_zero(v));
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
