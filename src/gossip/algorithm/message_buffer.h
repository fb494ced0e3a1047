// MessageBuffer: the storage an algorithm sends from or receives into, shared
// with the transport. After a peer failure a backend may still read or write
// a buffer whose request is done, until it lets go of the request
// (fabric/transport.h, "Buffer rule"); Traffic hands every request a share
// of its MessageBuffer's ownership, so an algorithm that throws and is torn
// down frees nothing a provider still writes into.
//
// A MessageBuffer is a handle to one heap vector: it cannot be copied
// (copying a model into a message is an explicit `*to = *from`), only
// moved, and a moved-from handle is empty. Resizing the vector is allowed
// between rounds, once every request on it is done: algorithms that fail
// are never run again (algorithm.h), so a vector a failed request may still
// touch is never resized.
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
  // What a request retains (fabric::Request::retain).
  std::shared_ptr<const void> owner() const { return data_; }

 private:
  std::shared_ptr<std::vector<T>> data_;
};

}  // namespace murmur::gossip::detail
