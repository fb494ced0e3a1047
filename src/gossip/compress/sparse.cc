// topk:<ratio> and randk:<ratio>: k = ceil(ratio * n) entries.
//
// topk body (header param: 0 = delta-varint indices, 1 = bitmap, whichever
// is smaller for this message; 2 = every entry in index order, k = n and no
// index bytes):
//   u32 k, u32 index_bytes, index_bytes of indices, zero pad to 4, k f32 values
// Format 2 exists because a ratio of 1 is where an adaptive schedule leaves
// most links: selecting and indexing all n entries cost 55x a memcpy to
// encode and 15x to decode (bench/kernels/compress_bench, topk:1), CPU that
// the peers sharing a host pay for nothing. Peers of one job must agree on
// this format: older builds refuse param 2 as malformed.
// randk body: the receiver redraws the indices from the seed, so only
//   u64 seed, u32 k, k f32 values
// randk is *unscaled* (values as they are, not times n/k): biased, so it runs
// with error feedback by default, like top-k (Stich et al. 2018, "Sparsified
// SGD with memory"). Both decode to zeros outside the chosen indices.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gossip/compress/codecs.h"
#include "gossip/compress/wire.h"

namespace murmur::gossip {
namespace {

std::string ratio_name(const char* kind, double ratio) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s:%g", kind, ratio);
  return buf;
}

class Sparse : public Compressor {
 protected:
  explicit Sparse(std::string name) : name_(std::move(name)) {}
  // Scatters k values at idx_ into out, throwing on an index >= n.
  void scatter_into(const float* vals, std::size_t k, std::span<float> out) {
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return kernels::cpu::scatter(s, b, idx_.data(), vals, k, out.data(), out.size());
    }),
                      name_.c_str(), "scatter");
  }
  std::string name_;
  detail::Scratch scratch_;
  std::vector<std::uint32_t> idx_;
  std::vector<float> vals_;
};

class TopK final : public Sparse {
 public:
  explicit TopK(double ratio) : Sparse(ratio_name("topk", ratio)), ratio_(ratio) {}
  std::string name() const override { return name_; }
  bool biased() const override { return true; }

 private:
  std::size_t max_bytes(std::size_t n, const EncodeParams&) const override {
    const std::size_t k = detail::count_for_ratio(ratio_, n);
    return wire::kHeaderBytes + 8 + std::min(5 * k, kernels::cpu::bitmap_bytes(n)) + 3 + 4 * k;
  }

  std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams& p) override {
    const std::size_t n = in.size(), k = detail::count_for_ratio(ratio_, n);
    if (k == n) {
      wire::Writer w(out);
      w.header(wire::Codec::kTopK, kEveryEntry, n);
      w.put<std::uint32_t>(static_cast<std::uint32_t>(n));
      w.put<std::uint32_t>(0);
      if (n > 0) std::memcpy(w.take(4 * n), in.data(), 4 * n);
      return w.size();
    }
    idx_.resize(k);
    vals_.resize(k);
    const std::uint64_t seed = detail::next_seed(counter_, p);
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return kernels::cpu::topk_select(s, b, in.data(), n, k, seed, idx_.data(), vals_.data());
    }),
                      name_.c_str(), "topk_select");
    const std::size_t varint = kernels::cpu::delta_varint_bytes(idx_.data(), k);
    const std::size_t bitmap = kernels::cpu::bitmap_bytes(n);
    const bool use_bitmap = bitmap < varint;
    wire::Writer w(out);
    w.header(wire::Codec::kTopK, use_bitmap ? 1 : 0, n);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(k));
    w.put<std::uint32_t>(static_cast<std::uint32_t>(use_bitmap ? bitmap : varint));
    if (use_bitmap)
      kernels::cpu::bitmap_encode(idx_.data(), k, n, reinterpret_cast<std::uint8_t*>(w.take(bitmap)));
    else
      kernels::cpu::delta_varint_encode(idx_.data(), k, reinterpret_cast<std::uint8_t*>(w.take(varint)));
    w.align4();
    wire::copy_bytes(w.take(4 * k), vals_.data(), 4 * k);
    return w.size();
  }

  void do_decode(std::span<const std::byte> in, std::span<float> out) override {
    wire::Reader r(in, name_.c_str());
    const std::size_t n = out.size();
    const unsigned format = r.header(wire::Codec::kTopK, n);
    if (format > kEveryEntry) wire::malformed(name_.c_str(), "unknown index format " + std::to_string(format));
    const std::size_t k = r.get<std::uint32_t>();
    const std::size_t index_bytes = r.get<std::uint32_t>();
    if (k > n) wire::malformed(name_.c_str(), std::to_string(k) + " entries for " + std::to_string(n) + " elements");
    if (4 * k > r.left()) wire::malformed(name_.c_str(), "shorter than its " + std::to_string(k) + " values");
    if (format == kEveryEntry) {
      if (k != n || index_bytes != 0)
        wire::malformed(name_.c_str(), "every-entry format with " + std::to_string(k) + " of " + std::to_string(n) +
                                           " entries and " + std::to_string(index_bytes) + " index bytes");
      if (n > 0) std::memcpy(out.data(), r.take(4 * n), 4 * n);
      r.finish();
      return;
    }
    const auto* index = reinterpret_cast<const std::uint8_t*>(r.take(index_bytes));
    idx_.resize(k);
    if (format == 1) {
      if (index_bytes != kernels::cpu::bitmap_bytes(n)) wire::malformed(name_.c_str(), "bitmap of the wrong length");
      if (kernels::cpu::bitmap_decode(index, n, k, idx_.data()) != kernels::Status::kOk)
        wire::malformed(name_.c_str(), "bitmap does not hold exactly k indices below n");
    } else {
      std::size_t used = 0;
      if (kernels::cpu::delta_varint_decode(index, index_bytes, k, n, idx_.data(), &used) != kernels::Status::kOk ||
          used != index_bytes)
        wire::malformed(name_.c_str(), "bad delta-varint indices (truncated, too long, or >= n)");
    }
    r.align4();
    const float* vals = wire::aligned_in<float>(r.take(4 * k), k, vals_);
    r.finish();
    scatter_into(vals, k, out);
  }

  static constexpr unsigned kEveryEntry = 2;  // header param: k = n, no indices
  double ratio_;
  std::uint64_t counter_ = 0;
};

class RandK final : public Sparse {
 public:
  explicit RandK(double ratio) : Sparse(ratio_name("randk", ratio)), ratio_(ratio) {}
  std::string name() const override { return name_; }
  bool biased() const override { return true; }

 private:
  std::size_t max_bytes(std::size_t n, const EncodeParams&) const override {
    return wire::kHeaderBytes + 12 + 4 * detail::count_for_ratio(ratio_, n);
  }

  void draw(std::size_t n, std::size_t k, std::uint64_t seed) {
    idx_.resize(k);
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return kernels::cpu::randk_indices(s, b, n, k, seed, idx_.data());
    }),
                      name_.c_str(), "randk_indices");
  }

  std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams& p) override {
    const std::size_t n = in.size(), k = detail::count_for_ratio(ratio_, n);
    const std::uint64_t seed = detail::next_seed(counter_, p);
    draw(n, k, seed);
    wire::Writer w(out);
    w.header(wire::Codec::kRandK, 0, n);
    w.put<std::uint64_t>(seed);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(k));
    vals_.resize(k);
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return kernels::cpu::gather(s, b, in.data(), idx_.data(), k, vals_.data());
    }),
                      name_.c_str(), "gather");
    wire::copy_bytes(w.take(4 * k), vals_.data(), 4 * k);
    return w.size();
  }

  void do_decode(std::span<const std::byte> in, std::span<float> out) override {
    wire::Reader r(in, name_.c_str());
    const std::size_t n = out.size();
    r.header(wire::Codec::kRandK, n);
    const auto seed = r.get<std::uint64_t>();
    const std::size_t k = r.get<std::uint32_t>();
    if (k > n) wire::malformed(name_.c_str(), std::to_string(k) + " entries for " + std::to_string(n) + " elements");
    const float* vals = wire::aligned_in<float>(r.take(4 * k), k, vals_);
    r.finish();
    draw(n, k, seed);
    scatter_into(vals, k, out);
  }

  double ratio_;
  std::uint64_t counter_ = 0;
};

}  // namespace

std::unique_ptr<Compressor> make_topk(double ratio) { return std::make_unique<TopK>(ratio); }
std::unique_ptr<Compressor> make_randk(double ratio) { return std::make_unique<RandK>(ratio); }

}  // namespace murmur::gossip
