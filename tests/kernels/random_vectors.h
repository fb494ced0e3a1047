// Seeded normal vectors for the kernel tests: the same (n, seed, scale) gives
// the same floats on every run of the same build, so a failing element can be
// reproduced by its index.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace murmur::testing {

// n draws of N(0, scale^2) from std::mt19937(seed). Pure; thread-safe.
inline std::vector<float> randn(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

}  // namespace murmur::testing
