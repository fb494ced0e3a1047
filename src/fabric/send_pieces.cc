#include "fabric/send_pieces.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "common/check.h"

namespace murmur::fabric {

SendPieces::SendPieces(const void* data, std::size_t bytes)
    : one_(bytes == 0 ? SendPiece() : SendPiece(static_cast<const std::byte*>(data), bytes)), bytes_(bytes) {}

SendPieces::SendPieces(std::span<const SendPiece> pieces) {
  std::size_t non_empty = 0;
  for (const SendPiece& piece : pieces) {
    if (piece.empty()) continue;
    if (piece.size() > std::numeric_limits<std::size_t>::max() - bytes_)
      throw std::length_error("isendv: the pieces' sizes add up to more than a size_t holds");
    bytes_ += piece.size();
    ++non_empty;
    one_ = piece;
  }
  if (non_empty < 2) return;
  one_ = SendPiece();
  many_.reserve(non_empty);
  starts_.reserve(non_empty);
  std::size_t start = 0;
  for (const SendPiece& piece : pieces) {
    if (piece.empty()) continue;
    many_.push_back(piece);
    starts_.push_back(start);
    start += piece.size();
  }
}

std::span<const SendPiece> SendPieces::pieces() const {
  if (!many_.empty()) return many_;
  if (bytes_ == 0) return {};
  return std::span<const SendPiece>(&one_, 1);
}

std::size_t SendPieces::piece_at(std::size_t offset) const {
  MURMUR_CHECK_LT(offset, bytes_);
  // The last piece that begins at or before `offset`.
  return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
}

std::size_t SendPieces::count_in(std::size_t offset, std::size_t length) const {
  MURMUR_CHECK_LE(length, bytes_ - std::min(offset, bytes_));
  if (length == 0) return 0;
  if (many_.empty()) return 1;
  return piece_at(offset + length - 1) - piece_at(offset) + 1;
}

void SendPieces::copy_to(std::size_t offset, std::size_t length, void* out) const {
  MURMUR_CHECK_LE(length, bytes_ - std::min(offset, bytes_));
  auto* to = static_cast<std::byte*>(out);
  visit(offset, length, [&](std::size_t, const std::byte* data, std::size_t bytes) {
    std::memcpy(to, data, bytes);
    to += bytes;
  });
}

}  // namespace murmur::fabric
