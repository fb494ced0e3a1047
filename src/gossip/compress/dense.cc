// identity, fp16, bf16: dense codecs. Body: n values (f32, or u16 halves /
// bfloat16s), at offset 8.
#include <cstring>
#include <vector>

#include "gossip/compress/codecs.h"
#include "gossip/compress/wire.h"

namespace murmur::gossip {
namespace {

class Identity final : public Compressor {
 public:
  std::string name() const override { return "identity"; }
  bool biased() const override { return false; }

 private:
  std::size_t max_bytes(std::size_t n, const EncodeParams&) const override { return wire::kHeaderBytes + 4 * n; }
  std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams&) override {
    wire::Writer w(out);
    w.header(wire::Codec::kIdentity, 0, in.size());
    wire::copy_bytes(w.take(in.size_bytes()), in.data(), in.size_bytes());
    return w.size();
  }
  void do_decode(std::span<const std::byte> in, std::span<float> out) override {
    wire::Reader r(in, "identity");
    r.header(wire::Codec::kIdentity, out.size());
    wire::copy_bytes(out.data(), r.take(out.size_bytes()), out.size_bytes());
    r.finish();
  }
};

// fp16 and bf16 differ only in their kernels: round to nearest even, biased
// (deterministic rounding), hence run with error feedback by default.
class Half final : public Compressor {
 public:
  explicit Half(bool brain) : brain_(brain) {}
  std::string name() const override { return brain_ ? "bf16" : "fp16"; }
  bool biased() const override { return true; }

 private:
  std::size_t max_bytes(std::size_t n, const EncodeParams&) const override { return wire::kHeaderBytes + 2 * n; }

  std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams&) override {
    wire::Writer w(out);
    w.header(brain_ ? wire::Codec::kBf16 : wire::Codec::kFp16, 0, in.size());
    std::byte* body = w.take(2 * in.size());
    const bool aligned = reinterpret_cast<std::uintptr_t>(body) % 2 == 0;
    if (!aligned) tmp_.resize(in.size());
    auto* dst = aligned ? reinterpret_cast<std::uint16_t*>(body) : tmp_.data();
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return brain_ ? kernels::cpu::f32_to_bf16(s, b, in.data(), dst, in.size())
                    : kernels::cpu::f32_to_f16(s, b, in.data(), dst, in.size());
    }),
                      name().c_str(), "f32_to_half");
    if (!aligned) wire::copy_bytes(body, tmp_.data(), 2 * in.size());
    return w.size();
  }

  void do_decode(std::span<const std::byte> in, std::span<float> out) override {
    const std::string codec = name();
    wire::Reader r(in, codec.c_str());
    r.header(brain_ ? wire::Codec::kBf16 : wire::Codec::kFp16, out.size());
    const auto* src = wire::aligned_in<std::uint16_t>(r.take(2 * out.size()), out.size(), tmp_);
    r.finish();
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return brain_ ? kernels::cpu::bf16_to_f32(s, b, src, out.data(), out.size())
                    : kernels::cpu::f16_to_f32(s, b, src, out.data(), out.size());
    }),
                      codec.c_str(), "half_to_f32");
  }

  bool brain_;
  detail::Scratch scratch_;
  std::vector<std::uint16_t> tmp_;
};

}  // namespace

std::unique_ptr<Compressor> make_identity() { return std::make_unique<Identity>(); }
std::unique_ptr<Compressor> make_fp16() { return std::make_unique<Half>(false); }
std::unique_ptr<Compressor> make_bf16() { return std::make_unique<Half>(true); }

}  // namespace murmur::gossip
