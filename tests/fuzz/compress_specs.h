// The compressor specs the compressor harnesses choose from (the input's
// first byte, modulo their count): every codec, at the edges of its
// parameter (the sparse formats switch index layout with the ratio).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace murmur::fuzz {

inline constexpr std::array<std::string_view, 15> kCompressorSpecs = {
    "identity", "fp16",        "bf16",      "qsgd:1",  "qsgd:127",   "sign",       "topk:0.01",  "topk:0.5",
    "topk:1",   "randk:0.001", "randk:0.1", "randk:1", "powersgd:1", "powersgd:4", "powersgd:64"};

inline std::string_view compressor_spec(std::uint8_t selector) {
  return kCompressorSpecs[selector % kCompressorSpecs.size()];
}

}  // namespace murmur::fuzz
