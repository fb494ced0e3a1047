// Harness: encode then decode with the same compressor spec (a sender and a
// receiver of their own, as in a job). Input: u8 spec selector, u64 seed,
// then the tensor as little-endian floats (at most 4096).
// Checks: encode stays within max_encoded_bytes; the receiver decodes what
// the sender encoded (a MalformedMessage here is a finding); identity
// returns the input bit for bit; qsgd and sign refuse (invalid_argument)
// only tensors with a value that is not finite or huge; and fp16/bf16 are idempotent: their decoded
// values (finite ones) encode and decode to themselves.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "compress_specs.h"
#include "fuzz_target.h"
#include "gossip/compress/compressor.h"

namespace {

std::vector<float> round_trip(std::string_view spec, const std::vector<float>& x, std::uint64_t seed) {
  using namespace murmur::gossip;
  auto sender = make_compressor(spec, Feedback::kNone);
  auto receiver = make_compressor(spec, Feedback::kNone);
  const EncodeParams params{.seed = seed};
  std::vector<std::byte> message(sender->max_encoded_bytes(x.size(), params));
  const std::size_t bytes = sender->encode(x, message, params);
  if (bytes > message.size()) murmur::fuzz::fail("encode wrote more than max_encoded_bytes");
  message.resize(bytes);
  std::vector<float> y(x.size());
  receiver->decode(message, y);
  return y;
}

bool all_finite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float f) { return std::isfinite(f); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::FuzzInput input(data, size);
  const auto spec = murmur::fuzz::compressor_spec(input.take<std::uint8_t>());
  const auto seed = input.take<std::uint64_t>();
  const auto rest = input.rest();
  std::vector<float> x(std::min<std::size_t>(rest.size() / 4, 4096));
  if (!x.empty()) std::memcpy(x.data(), rest.data(), 4 * x.size());

  std::vector<float> y;
  try {
    y = round_trip(spec, x, seed);
  } catch (const std::invalid_argument&) {
    // Documented for a norm or scale that is not finite (compressor.h).
    const bool tame = all_finite(x) && std::all_of(x.begin(), x.end(), [](float f) { return std::fabs(f) < 1e15f; });
    if (tame) murmur::fuzz::fail("encode refused a finite tensor");
    return 0;
  }
  if (x.empty()) return 0;  // nothing to compare (and memcmp takes no null pointers)
  if (spec == "identity" && std::memcmp(x.data(), y.data(), 4 * x.size()) != 0)
    murmur::fuzz::fail("identity changed the tensor");
  if ((spec == "fp16" || spec == "bf16") && all_finite(y)) {
    const std::vector<float> z = round_trip(spec, y, seed);
    if (std::memcmp(y.data(), z.data(), 4 * y.size()) != 0) murmur::fuzz::fail("16-bit rounding is not idempotent");
  }
  return 0;
}
