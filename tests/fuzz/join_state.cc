// Harness: decode_join_state (peer/train/join_state.h), what a joiner takes
// from its sponsor over the network. Input: u16 parameters, u8 epochs, then
// the bytes. They decode or throw std::invalid_argument; what decodes has a
// momentum of 0 or `parameters` values and encodes and decodes again.
#include <stdexcept>

#include "fuzz_target.h"
#include "peer/train/join_state.h"

namespace train = murmur::peer::train;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::FuzzInput input(data, size);
  const std::size_t parameters = input.take<std::uint16_t>();
  const int epochs = input.take<std::uint8_t>();
  train::JoinState state;
  try {
    state = train::decode_join_state(input.rest_string(), parameters, epochs);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  if (!state.momentum.empty() && state.momentum.size() != parameters) murmur::fuzz::fail("momentum of another size");
  (void)train::decode_join_state(train::encode_join_state(state), parameters, epochs);
  return 0;
}
