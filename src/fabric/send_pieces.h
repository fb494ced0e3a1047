// SendPieces: the message of a gathered send (Transport::isendv), as the
// pieces of caller memory it is made of, back to back. A compressed
// message is a header, an index and values that live in three places; a
// gathered send puts them on the wire without first packing them into one
// buffer (docs/fabric-performance.md, "Gathered sends").
//
//   transport.isendv(peer, tag, {fabric::as_piece(header), fabric::as_piece(values)});
//
// A SendPieces copies the list of pieces (pointer and length each), never
// their bytes: the bytes stay the caller's and must stay valid and
// unchanged until the request is done (transport.h, "Buffer rule"). Empty
// pieces are dropped. A list of one piece allocates nothing.
//
// Thread safety: as a std::vector's. Nothing here blocks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

namespace murmur::fabric {

using SendPiece = std::span<const std::byte>;

// The bytes of a contiguous range of T as a piece. Not of a temporary
// vector: the piece would dangle before the send is done.
template <typename T, std::size_t Extent>
SendPiece as_piece(std::span<T, Extent> values) {
  return std::as_bytes(std::span<const T>(values.data(), values.size()));
}
template <typename T>
SendPiece as_piece(const std::vector<T>& values) {
  return std::as_bytes(std::span<const T>(values));
}
template <typename T>
SendPiece as_piece(const std::vector<T>&& values) = delete;

class SendPieces {
 public:
  SendPieces() = default;
  // One piece: the message isend(peer, tag, data, bytes) sends.
  SendPieces(const void* data, std::size_t bytes);
  SendPieces(std::span<const SendPiece> pieces);  // NOLINT(google-explicit-constructor): isendv(p, t, pieces)
  SendPieces(std::initializer_list<SendPiece> pieces) : SendPieces(std::span<const SendPiece>(pieces)) {}
  SendPieces(const std::vector<SendPiece>& pieces)  // NOLINT(google-explicit-constructor): as the span
      : SendPieces(std::span<const SendPiece>(pieces)) {}

  // The message's size: the sum of the pieces'.
  std::size_t bytes() const { return bytes_; }
  // Non-empty pieces.
  std::size_t count() const { return many_.empty() ? (bytes_ > 0 ? 1 : 0) : many_.size(); }
  std::span<const SendPiece> pieces() const;

  // Message bytes [offset, offset + length), which must lie within bytes():
  // the number of pieces that hold them, each piece's part in turn to
  // visit(fn) as fn(std::size_t piece, const std::byte* data, std::size_t
  // bytes) (piece: its index in pieces()), and a copy.
  std::size_t count_in(std::size_t offset, std::size_t length) const;
  template <typename Fn>
  void visit(std::size_t offset, std::size_t length, Fn&& fn) const;
  void copy_to(std::size_t offset, std::size_t length, void* out) const;

 private:
  // Index of the piece that holds message byte `offset` (< bytes()).
  std::size_t piece_at(std::size_t offset) const;

  SendPiece one_;                    // the only piece, when many_ is empty
  std::vector<SendPiece> many_;      // two or more pieces
  std::vector<std::size_t> starts_;  // many_[i] begins at message byte starts_[i]
  std::size_t bytes_ = 0;
};

template <typename Fn>
void SendPieces::visit(std::size_t offset, std::size_t length, Fn&& fn) const {
  if (length == 0) return;
  if (many_.empty()) {
    fn(std::size_t{0}, one_.data() + offset, length);
    return;
  }
  for (std::size_t i = piece_at(offset); length > 0; ++i) {
    const std::size_t skip = offset - starts_[i];
    const std::size_t take = std::min(length, many_[i].size() - skip);
    fn(i, many_[i].data() + skip, take);
    offset += take;
    length -= take;
  }
}

}  // namespace murmur::fabric
