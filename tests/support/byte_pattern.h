// byte_pattern: reproducible bytes for message payloads in transport tests,
// different for every seed, so that a message delivered to the wrong
// receive, or a chunk out of place, shows up as a mismatch.
//
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace murmur::testing {

inline std::vector<unsigned char> byte_pattern(std::size_t bytes, std::uint64_t seed) {
  std::vector<unsigned char> v(bytes);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (auto& b : v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<unsigned char>(x >> 56);
  }
  return v;
}

}  // namespace murmur::testing
