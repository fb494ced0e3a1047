// Internal: seeded shuffles whose result is fixed by the seed alone, on every
// standard library (std::shuffle and std::uniform_int_distribution are
// implementation-defined, so two peers built differently could disagree).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>

namespace murmur::peer::data::detail {

// SplitMix64's finalizer: turns (seed, stream) pairs into well-spread seeds,
// so that seed 1 epoch 2 and seed 2 epoch 1 do not collide.
inline std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, n), n >= 1, without modulo bias (rejection sampling).
inline std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t r;
  do r = rng();
  while (r >= limit);
  return r % n;
}

// Fisher-Yates.
template <typename T>
void shuffle(std::span<T> items, std::mt19937_64& rng) {
  for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[uniform_below(rng, i)]);
}

}  // namespace murmur::peer::data::detail
