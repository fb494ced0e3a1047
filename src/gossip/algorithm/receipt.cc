#include "gossip/algorithm/receipt.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace murmur::gossip::detail {
namespace {

constexpr std::uint32_t kMagic = 0x5443524d;  // "MRCT" in memory order
constexpr std::uint16_t kVersion = 1;
// A receive that took longer than this (11.6 days) is not a measurement.
constexpr double kMaxSeconds = 1e6;

template <typename T>
void put(std::byte*& at, T v) {
  std::memcpy(at, &v, sizeof v);
  at += sizeof v;
}
template <typename T>
T get(const std::byte*& at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  at += sizeof v;
  return v;
}

}  // namespace

ReceiptBuffer encode_receipt(fabric::Tag message_tag, double receive_seconds) {
  ReceiptBuffer out{};
  std::byte* at = out.data();
  put<std::uint32_t>(at, kMagic);
  put<std::uint16_t>(at, kVersion);
  put<std::uint16_t>(at, 0);
  put<std::uint64_t>(at, message_tag);
  put<double>(at, receive_seconds);
  return out;
}

std::optional<double> decode_receipt(std::span<const std::byte> bytes, fabric::Tag message_tag, std::string& why) {
  if (bytes.size() != kReceiptBytes) {
    why = std::to_string(bytes.size()) + " bytes, a receipt has " + std::to_string(kReceiptBytes);
    return std::nullopt;
  }
  const std::byte* at = bytes.data();
  const auto magic = get<std::uint32_t>(at);
  const auto version = get<std::uint16_t>(at);
  const auto reserved = get<std::uint16_t>(at);
  const auto tag = get<std::uint64_t>(at);
  const auto seconds = get<double>(at);
  if (magic != kMagic) {
    why = "bad magic";
  } else if (version != kVersion) {
    why = "version " + std::to_string(version) + ", this build reads " + std::to_string(kVersion);
  } else if (reserved != 0) {
    why = "reserved bits set";
  } else if (tag != message_tag) {
    why = "for tag " + std::to_string(tag) + ", expected " + std::to_string(message_tag);
  } else if (!(std::isfinite(seconds) && seconds >= 0 && seconds <= kMaxSeconds)) {
    why = "receive time " + std::to_string(seconds) + " s is not in [0, 1e6]";
  } else {
    return seconds;
  }
  return std::nullopt;
}

}  // namespace murmur::gossip::detail
