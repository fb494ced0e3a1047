// Receipt: a receiver's report on one message, sent back to its sender (tag
// receipt_tag(message's tag), communicator.h) when AlgorithmOptions::receipts
// is on. It says how long the receiver's receive took, from posting it to its
// completion, so that the sender can split its own send time into the
// receiver's lateness and the link's transfer (docs/scheduler.md, "Late
// receivers"). Untrusted input: decode_receipt() checks every field.
//
// Wire format, 24 bytes, little-endian (as the compressors' messages):
//   u32 magic 'MRCT' (0x5443524d)  u16 version (1)  u16 reserved (0)
//   u64 the message's tag          f64 receive seconds, finite, in [0, 1e6]
// Internal to algorithm/. Thread-safe (no state).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "fabric/request.h"

namespace murmur::gossip::detail {

inline constexpr std::size_t kReceiptBytes = 24;
using ReceiptBuffer = std::array<std::byte, kReceiptBytes>;

ReceiptBuffer encode_receipt(fabric::Tag message_tag, double receive_seconds);

// The receive seconds, or nullopt with `why` set when the bytes are not a
// receipt for `message_tag` (wrong size, magic, version, reserved bits, tag,
// or a time that is not finite or outside [0, 1e6]).
std::optional<double> decode_receipt(std::span<const std::byte> bytes, fabric::Tag message_tag, std::string& why);

}  // namespace murmur::gossip::detail
