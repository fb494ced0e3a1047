// Harness: parse_scalar_list (peer/api/scalar_gather.h), the values each
// rank publishes for the schedule agreement and shared evaluations, read
// from the rendezvous. Input: u8 count (0..15), then the text. What parses
// has exactly `count` finite numbers.
#include <cmath>

#include "fuzz_target.h"
#include "peer/api/scalar_gather.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::FuzzInput input(data, size);
  const std::size_t count = input.take<std::uint8_t>() % 16;
  const auto values = murmur::peer::parse_scalar_list(input.rest_string(), count);
  if (!values) return 0;
  if (values->size() != count) murmur::fuzz::fail("parsed the wrong number of values");
  for (double v : *values)
    if (!std::isfinite(v)) murmur::fuzz::fail("parsed a value that is not finite");
  return 0;
}
