// Bounds-checked little-endian reading and writing of compressor messages.
// Internal to src/gossip/compress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "gossip/compress/compressor.h"

namespace murmur::gossip::wire {

enum class Codec : std::uint8_t {
  kIdentity = 1,
  kFp16 = 2,
  kBf16 = 3,
  kQsgd = 4,
  kSign = 5,
  kTopK = 6,
  kRandK = 7,
  kPowerSgd = 8,
};

inline constexpr std::size_t kHeaderBytes = 8;

inline std::size_t pad4(std::size_t x) { return (x + 3) & ~std::size_t(3); }

// memcpy of a variable length. An empty tensor has null data(), and memcpy
// with a null pointer is undefined even for 0 bytes (UBSan, found by
// tests/fuzz/compress_*): every such copy goes through here.
inline void copy_bytes(void* to, const void* from, std::size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
}

[[noreturn]] inline void malformed(const char* codec, const std::string& what) {
  throw MalformedMessage(std::string("compressor ") + codec + ": malformed message: " + what +
                         " (dropping it; the sender runs another version or the data was corrupted)");
}

class Writer {
 public:
  explicit Writer(std::span<std::byte> out) : out_(out) {}
  std::byte* take(std::size_t bytes) {
    if (bytes > out_.size() - pos_) throw std::length_error("compressor: output span shorter than max_encoded_bytes");
    std::byte* p = out_.data() + pos_;
    pos_ += bytes;
    return p;
  }
  template <typename T>
  void put(T v) {
    std::memcpy(take(sizeof(T)), &v, sizeof(T));
  }
  void header(Codec c, std::uint8_t param, std::size_t n) {
    if (n > 0xffffffffu) throw std::length_error("compressor: tensors above 2^32 - 1 elements are not supported");
    put<std::uint8_t>(static_cast<std::uint8_t>(c));
    put<std::uint8_t>(param);
    put<std::uint16_t>(0);
    put<std::uint32_t>(static_cast<std::uint32_t>(n));
  }
  void align4() { std::memset(take(pad4(pos_) - pos_), 0, pad4(pos_) - pos_); }
  std::size_t size() const { return pos_; }

 private:
  std::span<std::byte> out_;
  std::size_t pos_ = 0;
};

class Reader {
 public:
  Reader(std::span<const std::byte> in, const char* codec) : in_(in), codec_(codec) {}
  const std::byte* take(std::size_t bytes) {
    if (bytes > in_.size() - pos_)
      malformed(codec_, "needs " + std::to_string(bytes) + " bytes at offset " + std::to_string(pos_) + " of a " +
                            std::to_string(in_.size()) + "-byte message");
    const std::byte* p = in_.data() + pos_;
    pos_ += bytes;
    return p;
  }
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  // Checks codec, param and n against what this decoder expects.
  std::uint8_t header(Codec c, std::size_t n_expected) {
    const auto codec = get<std::uint8_t>();
    const auto param = get<std::uint8_t>();
    const auto zero = get<std::uint16_t>();
    const auto n = get<std::uint32_t>();
    if (codec != static_cast<std::uint8_t>(c))
      malformed(codec_, "codec id " + std::to_string(codec) + ", expected " + std::to_string(static_cast<int>(c)));
    if (zero != 0) malformed(codec_, "reserved header bits set");
    if (n != n_expected)
      malformed(codec_,
                "carries " + std::to_string(n) + " elements, the receiver expects " + std::to_string(n_expected));
    return param;
  }
  void align4() { take(pad4(pos_) - pos_); }
  std::size_t left() const { return in_.size() - pos_; }
  void finish() {
    if (pos_ != in_.size()) malformed(codec_, std::to_string(in_.size() - pos_) + " trailing bytes");
  }
  const char* codec() const { return codec_; }

 private:
  std::span<const std::byte> in_;
  const char* codec_;
  std::size_t pos_ = 0;
};

// A T array at p, used in place when aligned, else copied into tmp.
template <typename T>
const T* aligned_in(const std::byte* p, std::size_t count, std::vector<T>& tmp) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0) return reinterpret_cast<const T*>(p);
  tmp.resize(count);
  copy_bytes(tmp.data(), p, count * sizeof(T));
  return tmp.data();
}

}  // namespace murmur::gossip::wire
