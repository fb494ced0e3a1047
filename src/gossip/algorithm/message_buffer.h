// MessageBuffer: the storage an algorithm sends from or receives into, shared
// with the transport. After a peer failure a backend may still read or write
// a buffer whose request is done, until it lets go of the request
// (fabric/transport.h, "Buffer rule"); Traffic hands every request a share
// of its MessageBuffer's ownership, so an algorithm that throws and is torn
// down frees nothing a provider still writes into.
//
// A MessageBuffer is a handle to one heap vector: it cannot be copied
// (copying a model into a message is an explicit `*to = *from`), only
// moved, and a moved-from handle is empty.
//
// Reuse. A round that goes on without a lost peer (tolerate_lost_peers)
// leaves that peer's failed requests with the backend, which may still
// write into their buffers. So a message is always built in fresh(): the
// same vector when no request holds it any more (the usual case: no
// allocation), else a new one, leaving the old to the requests that hold
// it. Resizing or assigning through operator-> is only for a vector that
// was just obtained from fresh() in the same round.
//
// Internal to algorithm/. Thread safety: as std::vector's.
#pragma once

#include <memory>
#include <span>
#include <vector>

namespace murmur::gossip::detail {

template <typename T>
class MessageBuffer {
 public:
  MessageBuffer() : data_(std::make_shared<std::vector<T>>()) {}
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;
  MessageBuffer(MessageBuffer&&) noexcept = default;
  MessageBuffer& operator=(MessageBuffer&&) noexcept = default;

  std::vector<T>& operator*() const { return *data_; }
  std::vector<T>* operator->() const { return data_.get(); }
  std::span<T> span() const { return std::span<T>(*data_); }
  // The vector to build the next message in (see "Reuse"); its contents are
  // unspecified (the old ones, or none).
  std::vector<T>& fresh() {
    if (data_.use_count() > 1) data_ = std::make_shared<std::vector<T>>();
    return *data_;
  }
  // What a request retains (fabric::Request::retain).
  std::shared_ptr<const void> owner() const { return data_; }

 private:
  std::shared_ptr<std::vector<T>> data_;
};

}  // namespace murmur::gossip::detail
