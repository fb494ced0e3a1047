// qsgd:<s> and sign: a float (norm or scale) and fixed-width codes.
//   qsgd body: f32 norm, packed_bytes(n, qsgd_bits(s)) bytes; header param = s.
//   sign body: f32 scale, ceil(n / 8) bytes of sign bits (1 = negative).
#include <cmath>
#include <string>

#include "gossip/compress/codecs.h"
#include "gossip/compress/wire.h"

namespace murmur::gossip {
namespace {

// Unbiased: E[decode(encode(x))] = x, so no error feedback by default.
class Qsgd final : public Compressor {
 public:
  explicit Qsgd(unsigned s) : s_(s), name_("qsgd:" + std::to_string(s)) {}
  std::string name() const override { return name_; }
  bool biased() const override { return false; }

 private:
  std::size_t max_bytes(std::size_t n, const EncodeParams&) const override {
    return wire::kHeaderBytes + 4 + kernels::packed_bytes(n, kernels::qsgd_bits(s_));
  }
  std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams& p) override {
    wire::Writer w(out);
    w.header(wire::Codec::kQsgd, static_cast<std::uint8_t>(s_), in.size());
    std::byte* norm_at = w.take(4);
    auto* packed = reinterpret_cast<std::uint8_t*>(w.take(kernels::packed_bytes(in.size(), kernels::qsgd_bits(s_))));
    float norm = 0;
    const std::uint64_t seed = detail::next_seed(counter_, p);
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return kernels::cpu::qsgd_encode(s, b, in.data(), in.size(), s_, seed, &norm, packed);
    }),
                      name_.c_str(), "qsgd_encode");
    // A receiver refuses a norm that is not finite (do_decode), so such a
    // message would be dropped everywhere, in silence: refuse it here.
    if (!std::isfinite(norm)) detail::not_finite(name_.c_str(), "norm");
    std::memcpy(norm_at, &norm, 4);
    return w.size();
  }
  void do_decode(std::span<const std::byte> in, std::span<float> out) override {
    wire::Reader r(in, name_.c_str());
    const unsigned s = r.header(wire::Codec::kQsgd, out.size());
    if (s != s_) wire::malformed(name_.c_str(), "encoded with " + std::to_string(s) + " levels");
    const float norm = r.get<float>();
    if (!std::isfinite(norm) || norm < 0) wire::malformed(name_.c_str(), "norm is negative or not finite");
    const auto* packed =
        reinterpret_cast<const std::uint8_t*>(r.take(kernels::packed_bytes(out.size(), kernels::qsgd_bits(s_))));
    r.finish();
    detail::expect_ok(scratch_.call([&](void* sc, std::size_t& b) {
      return kernels::cpu::qsgd_decode(sc, b, packed, out.size(), s_, norm, out.data());
    }),
                      name_.c_str(), "qsgd_decode");
  }

  unsigned s_;
  std::string name_;
  std::uint64_t counter_ = 0;
  detail::Scratch scratch_;
};

class Sign final : public Compressor {
 public:
  std::string name() const override { return "sign"; }
  bool biased() const override { return true; }

 private:
  std::size_t max_bytes(std::size_t n, const EncodeParams&) const override {
    return wire::kHeaderBytes + 4 + (n + 7) / 8;
  }
  std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams&) override {
    wire::Writer w(out);
    w.header(wire::Codec::kSign, 0, in.size());
    std::byte* scale_at = w.take(4);
    auto* bits = reinterpret_cast<std::uint8_t*>(w.take((in.size() + 7) / 8));
    float scale = 0;
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return kernels::cpu::sign_encode(s, b, in.data(), in.size(), &scale, bits);
    }),
                      "sign", "sign_encode");
    if (!std::isfinite(scale)) detail::not_finite("sign", "scale");  // as qsgd's norm
    std::memcpy(scale_at, &scale, 4);
    return w.size();
  }
  void do_decode(std::span<const std::byte> in, std::span<float> out) override {
    wire::Reader r(in, "sign");
    r.header(wire::Codec::kSign, out.size());
    const float scale = r.get<float>();
    if (!std::isfinite(scale) || scale < 0) wire::malformed("sign", "scale is negative or not finite");
    const auto* bits = reinterpret_cast<const std::uint8_t*>(r.take((out.size() + 7) / 8));
    r.finish();
    detail::expect_ok(scratch_.call([&](void* s, std::size_t& b) {
      return kernels::cpu::sign_decode(s, b, bits, out.size(), scale, out.data());
    }),
                      "sign", "sign_decode");
  }

  detail::Scratch scratch_;
};

}  // namespace

std::unique_ptr<Compressor> make_qsgd(unsigned levels) { return std::make_unique<Qsgd>(levels); }
std::unique_ptr<Compressor> make_sign() { return std::make_unique<Sign>(); }

}  // namespace murmur::gossip
