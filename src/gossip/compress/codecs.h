// The concrete compressors and the helpers they share. Internal to
// src/gossip/compress; users go through make_compressor (compressor.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gossip/compress/compressor.h"
#include "kernels/compress.h"

namespace murmur::gossip {

std::unique_ptr<Compressor> make_identity();
std::unique_ptr<Compressor> make_fp16();
std::unique_ptr<Compressor> make_bf16();
std::unique_ptr<Compressor> make_qsgd(unsigned levels);
std::unique_ptr<Compressor> make_sign();
std::unique_ptr<Compressor> make_topk(double ratio);
std::unique_ptr<Compressor> make_randk(double ratio);
std::unique_ptr<Compressor> make_powersgd(unsigned rank);

namespace detail {

// Host scratch for CUB-shaped kernel calls, grown on demand and kept.
class Scratch {
 public:
  template <typename F>
  kernels::Status call(F f) {
    std::size_t bytes = 0;
    kernels::Status s = f(nullptr, bytes);
    if (s != kernels::Status::kOk) return s;
    if (buf_.size() < bytes || buf_.empty()) buf_.resize(bytes > 0 ? bytes : 1);
    bytes = buf_.size();
    return f(buf_.data(), bytes);
  }

 private:
  std::vector<std::byte> buf_;
};

// Throws std::logic_error for statuses that are bugs of this layer;
// kMalformed becomes MalformedMessage naming the codec.
void expect_ok(kernels::Status s, const char* codec, const char* kernel);

// Throws std::invalid_argument: `codec` cannot encode a tensor whose `what`
// (qsgd's norm, sign's scale) is not finite.
[[noreturn]] void not_finite(const char* codec, const char* what);

// k = ceil(ratio * n), at least 1 when n > 0.
std::size_t count_for_ratio(double ratio, std::size_t n);

// A per-instance stream of seeds for stochastic compressors.
std::uint64_t next_seed(std::uint64_t& counter, const EncodeParams& p);

}  // namespace detail
}  // namespace murmur::gossip
