// Gradient/model compressors for gossip: one interface, one factory.
//
//   auto c = murmur::gossip::make_compressor("topk:0.01");   // with error feedback
//   std::vector<std::byte> msg(c->max_encoded_bytes(x.size()));
//   msg.resize(c->encode(x, msg));     // the bytes this message takes on the wire
//   c->decode(msg, y);                 // on the receiver (its own instance)
//
// Specs: identity | fp16 | bf16 | qsgd:<s> (1..127 levels) | sign |
// topk:<ratio> | randk:<ratio> | powersgd:<rank> (1..64); ratio in (0, 1].
//
// Ownership and threads: an instance belongs to one tensor stream on one
// thread at a time. It keeps state (scratch buffers, the error-feedback
// residual, PowerSGD's warm-started Q, the seed counter of the stochastic
// compressors), so a sender and a receiver each hold their own. No call
// blocks on anything but the CPU work it does.
//
// Wire format (little-endian), every message: an 8-byte header
//   u8 codec, u8 param (format or level count), u16 zero, u32 n (elements)
// then the codec's body (see each codec's .cc); float arrays start at
// multiples of 4 from the start of the message. decode() checks the header,
// every length, count and index against the buffer and against out.size(),
// and throws MalformedMessage for anything that does not fit exactly; it
// never reads or writes outside the two spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/trace.h"

namespace murmur::gossip {

// A message from the network that breaks its format (truncated, wrong codec,
// counts or indices out of range). The message names the codec and the fault.
class MalformedMessage : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A compressor spec that does not parse; the message quotes the spec and
// lists the accepted forms.
class BadCompressorSpec : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct EncodeParams {
  // Seed of the stochastic compressors (qsgd rounding, randk subset). Unset:
  // the instance's own counter, a fresh draw per call.
  std::optional<std::uint64_t> seed;
  // Matrix shape for powersgd (rows * cols == n). 0: a near-square shape
  // with zero padding. Ignored by the other compressors.
  std::size_t rows = 0;
  std::size_t cols = 0;
};

class Compressor {
 public:
  virtual ~Compressor() = default;

  // Canonical spec, e.g. "topk:0.01"; wrapped in "ef(...)" with feedback.
  virtual std::string name() const = 0;
  // True when decode(encode(x)) is not an unbiased estimate of x, so the
  // compressor should run inside ErrorFeedback (make_compressor's default).
  virtual bool biased() const = 0;
  // Upper bound on encode's result for n elements.
  std::size_t max_encoded_bytes(std::size_t n, const EncodeParams& p = {}) const { return max_bytes(n, p); }
  // Encodes `in` into `out` (at least max_encoded_bytes long); returns the
  // bytes written, which is what the message takes on the wire. qsgd and
  // sign throw std::invalid_argument for a tensor that holds NaN or Inf (or
  // values whose norm overflows a float): their receivers would refuse the
  // message.
  std::size_t encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams& p = {}) {
    trace::Scope span(trace::Category::kCompress, "encode");
    const std::size_t bytes = do_encode(in, out, p);
    span.args().bytes = static_cast<std::int64_t>(bytes);
    return bytes;
  }
  // Decodes a whole message into `out`, whose size must be the sender's n.
  // Throws MalformedMessage (see the header comment).
  void decode(std::span<const std::byte> in, std::span<float> out) {
    trace::Scope span(trace::Category::kCompress, "decode");
    span.args().bytes = static_cast<std::int64_t>(in.size());
    do_decode(in, out);
  }

 private:
  virtual std::size_t max_bytes(std::size_t n, const EncodeParams& p) const = 0;
  virtual std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams& p) = 0;
  virtual void do_decode(std::span<const std::byte> in, std::span<float> out) = 0;
};

// Error feedback (Seide et al. 2014; Karimireddy et al. 2019): e += x;
// message = C(e); e -= decode(message). Over steps, the sum of decoded
// messages plus the residual equals the sum of inputs. A change of n resets
// the residual to zero.
class ErrorFeedback final : public Compressor {
 public:
  explicit ErrorFeedback(std::unique_ptr<Compressor> inner);
  ~ErrorFeedback() override;
  std::string name() const override;
  bool biased() const override { return false; }
  std::span<const float> residual() const;
  // Sets the residual (a checkpoint's); empty: none yet (the next encode
  // starts from zero). The next encode keeps it only if its n matches.
  void restore_residual(std::span<const float> residual);
  Compressor& inner();

 private:
  std::size_t max_bytes(std::size_t n, const EncodeParams& p) const override;
  std::size_t do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams& p) override;
  void do_decode(std::span<const std::byte> in, std::span<float> out) override;
  struct State;
  std::unique_ptr<Compressor> inner_;
  std::unique_ptr<State> state_;
};

enum class Feedback {
  kAuto,  // wrap biased compressors in ErrorFeedback
  kNone,  // the bare compressor (e.g. CHOCO-SGD, whose public copies replace it)
};

// A compressor spec, parsed once ("topk:0.01" -> kTopk, ratio 0.01). Callers
// that build several compressors from one spec (a sender and a decoder per
// neighbour), or change a sparse compressor's ratio while running, keep this
// rather than the text.
struct CompressorSpec {
  enum class Kind { kIdentity, kFp16, kBf16, kSign, kQsgd, kTopk, kRandk, kPowersgd };
  Kind kind = Kind::kIdentity;
  double ratio = 1;    // kTopk, kRandk: in (0, 1]
  unsigned param = 0;  // kQsgd: levels 1..127; kPowersgd: rank 1..64

  // topk and randk: the ratio of values sent can be changed (with_ratio).
  bool sparse() const { return kind == Kind::kTopk || kind == Kind::kRandk; }
  // The same sparse compressor at another ratio in (0, 1]. MURMUR_CHECKs sparse().
  CompressorSpec with_ratio(double new_ratio) const;
  // The canonical text, e.g. "topk:0.01" (ratios printed with %.9g).
  std::string text() const;
};

// Throws BadCompressorSpec naming the spec.
CompressorSpec parse_compressor_spec(std::string_view spec);
std::unique_ptr<Compressor> make_compressor(const CompressorSpec& spec, Feedback feedback = Feedback::kAuto);
// parse_compressor_spec, then make_compressor.
std::unique_ptr<Compressor> make_compressor(std::string_view spec, Feedback feedback = Feedback::kAuto);

}  // namespace murmur::gossip
