// Harness: decode_receipt (gossip/algorithm/receipt.h), a receiver's report
// on one message. Input: u64 the tag the sender expects, then the receipt.
// A receipt that decodes carries a finite time in [0, 1e6] and re-encodes
// to its own bytes; one that does not says why.
#include <cmath>
#include <cstring>

#include "fuzz_target.h"
#include "gossip/algorithm/receipt.h"

namespace detail = murmur::gossip::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::FuzzInput input(data, size);
  const auto tag = input.take<std::uint64_t>();
  const auto bytes = input.rest();
  std::string why;
  const auto seconds = detail::decode_receipt(bytes, tag, why);
  if (!seconds) {
    if (why.empty()) murmur::fuzz::fail("receipt refused without a reason");
    return 0;
  }
  if (!std::isfinite(*seconds) || *seconds < 0 || *seconds > 1e6) murmur::fuzz::fail("receipt time out of range");
  const auto again = detail::encode_receipt(tag, *seconds);
  if (bytes.size() != again.size() || std::memcmp(bytes.data(), again.data(), again.size()) != 0)
    murmur::fuzz::fail("a receipt that decodes does not re-encode to its bytes");
  return 0;
}
