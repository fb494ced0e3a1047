// Harness: a compressor's decode() on a message from the network.
// Input: u8 spec selector (compress_specs.h), u16 element count n, then the
// message. decode() must either fill its n outputs or throw
// MalformedMessage, and never touch memory outside its spans (ASan).
#include <vector>

#include "compress_specs.h"
#include "fuzz_target.h"
#include "gossip/compress/compressor.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::FuzzInput input(data, size);
  const auto spec = murmur::fuzz::compressor_spec(input.take<std::uint8_t>());
  const std::size_t n = input.take<std::uint16_t>() % 4097;
  auto compressor = murmur::gossip::make_compressor(spec, murmur::gossip::Feedback::kNone);
  std::vector<float> out(n);
  try {
    compressor->decode(input.rest(), out);
  } catch (const murmur::gossip::MalformedMessage&) {
  }
  return 0;
}
