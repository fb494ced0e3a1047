// powersgd:<rank>: the tensor as a rows x cols matrix M (EncodeParams, or a
// near-square shape with zero padding), one power iteration from the Q of
// the previous call (warm start; seeded Gaussian the first time or when the
// shape changes), P orthonormalised by Gram-Schmidt. Biased: runs with error
// feedback by default. Body:
//   u32 rows, u32 cols, u32 rank, P (rows x rank f32), Q (cols x rank f32)
// and the receiver decodes P Q^T (its first n elements).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gossip/compress/codecs.h"
#include "gossip/compress/wire.h"
#include "kernels/rng.h"

namespace murmur::gossip {
namespace {

struct Shape {
  std::size_t rows, cols, rank;
};

class PowerSgd final : public Compressor {
 public:
  explicit PowerSgd(unsigned rank) : rank_(rank), name_("powersgd:" + std::to_string(rank)) {}
  std::string name() const override { return name_; }
  bool biased() const override { return true; }

 private:
  Shape shape_for(std::size_t n, const EncodeParams& p) const {
    std::size_t rows = p.rows, cols = p.cols;
    if (rows == 0 && cols == 0) {
      cols = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(std::sqrt(double(n)))));
      rows = std::max<std::size_t>(1, (n + cols - 1) / cols);
    } else if (rows * cols != n) {
      throw std::invalid_argument(name_ + ": EncodeParams shape " + std::to_string(rows) + "x" + std::to_string(cols) +
                                  " does not hold " + std::to_string(n) + " elements");
    }
    return {rows, cols, std::min<std::size_t>({rank_, rows, cols})};
  }

  std::size_t max_bytes(std::size_t n, const EncodeParams& p) const override {
    const Shape s = shape_for(n, p);
    return wire::kHeaderBytes + 12 + 4 * s.rank * (s.rows + s.cols);
  }

  std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams& p) override {
    const std::size_t n = in.size();
    const Shape s = shape_for(n, p);
    if (s.rows != rows_ || s.cols != cols_ || q_.size() != s.cols * s.rank) {
      rows_ = s.rows;
      cols_ = s.cols;
      q_.resize(s.cols * s.rank);
      const std::uint32_t key = kernels::seed_key(0x9051d5ull + s.rows * 1000003ull + s.cols);
      for (std::size_t i = 0; i < q_.size(); ++i) {  // Box-Muller
        const float u1 = 1.0f - kernels::draw_unit(key, std::uint32_t(2 * i));
        const float u2 = kernels::draw_unit(key, std::uint32_t(2 * i + 1));
        q_[i] = std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
      }
    }
    const float* m = in.data();
    if (s.rows * s.cols != n) {
      padded_.assign(s.rows * s.cols, 0.0f);
      wire::copy_bytes(padded_.data(), in.data(), in.size_bytes());
      m = padded_.data();
    }
    p_.resize(s.rows * s.rank);
    detail::expect_ok(scratch_.call([&](void* sc, std::size_t& b) {
      return kernels::cpu::powersgd_factor(sc, b, m, s.rows, s.cols, s.rank, p_.data(), q_.data());
    }),
                      name_.c_str(), "powersgd_factor");
    wire::Writer w(out);
    w.header(wire::Codec::kPowerSgd, 0, n);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(s.rows));
    w.put<std::uint32_t>(static_cast<std::uint32_t>(s.cols));
    w.put<std::uint32_t>(static_cast<std::uint32_t>(s.rank));
    wire::copy_bytes(w.take(4 * p_.size()), p_.data(), 4 * p_.size());
    wire::copy_bytes(w.take(4 * q_.size()), q_.data(), 4 * q_.size());
    return w.size();
  }

  void do_decode(std::span<const std::byte> in, std::span<float> out) override {
    wire::Reader r(in, name_.c_str());
    const std::size_t n = out.size();
    r.header(wire::Codec::kPowerSgd, n);
    const std::size_t rows = r.get<std::uint32_t>(), cols = r.get<std::uint32_t>(), rank = r.get<std::uint32_t>();
    if (rows == 0 || cols == 0 || rows * cols < n || (rows - 1) * cols >= std::max<std::size_t>(n, 1))
      wire::malformed(name_.c_str(), "shape " + std::to_string(rows) + "x" + std::to_string(cols) + " does not fit " +
                                         std::to_string(n) + " elements");
    if (rank == 0 || rank > 64 || rank > std::min(rows, cols))
      wire::malformed(name_.c_str(), "rank " + std::to_string(rank) + " out of range");
    // Both factors must be in the message before anything is allocated.
    if (r.left() != 4 * rank * (rows + cols)) wire::malformed(name_.c_str(), "factor bytes do not match the shape");
    const float* pf = wire::aligned_in<float>(r.take(4 * rows * rank), rows * rank, p_in_);
    const float* qf = wire::aligned_in<float>(r.take(4 * cols * rank), cols * rank, q_in_);
    r.finish();
    float* dst = out.data();
    if (rows * cols != n) {
      expanded_.resize(rows * cols);
      dst = expanded_.data();
    }
    detail::expect_ok(scratch_.call([&](void* sc, std::size_t& b) {
      return kernels::cpu::powersgd_expand(sc, b, pf, qf, rows, cols, rank, dst);
    }),
                      name_.c_str(), "powersgd_expand");
    if (dst != out.data()) wire::copy_bytes(out.data(), dst, out.size_bytes());
  }

  std::size_t rank_;
  std::string name_;
  std::size_t rows_ = 0, cols_ = 0;
  std::vector<float> q_, p_, padded_, p_in_, q_in_, expanded_;
  detail::Scratch scratch_;
};

}  // namespace

std::unique_ptr<Compressor> make_powersgd(unsigned rank) { return std::make_unique<PowerSgd>(rank); }

}  // namespace murmur::gossip
