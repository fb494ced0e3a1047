// Counter-based random numbers shared by the CPU and CUDA bodies, so that a
// seeded kernel gives the same draw for element i on either: no state, one
// hash per (seed, counter). Not cryptographic; good enough for stochastic
// rounding and sampling.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define MURMUR_HD __host__ __device__ __forceinline__
#else
#define MURMUR_HD inline
#endif

namespace murmur::kernels {

// murmur3's 32-bit finaliser.
MURMUR_HD std::uint32_t mix32(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// Folds a 64-bit seed into the 32-bit key the per-element hash uses.
MURMUR_HD std::uint32_t seed_key(std::uint64_t seed) {
  return mix32(static_cast<std::uint32_t>(seed) ^ mix32(static_cast<std::uint32_t>(seed >> 32) + 0x9e3779b9u));
}

MURMUR_HD std::uint32_t draw_u32(std::uint32_t key, std::uint32_t counter) {
  return mix32(counter * 0x9e3779b9u ^ key);
}

// Uniform in [0, 1) with 24 random bits.
MURMUR_HD float draw_unit(std::uint32_t key, std::uint32_t counter) {
  return static_cast<float>(draw_u32(key, counter) >> 8) * (1.0f / 16777216.0f);
}

// Two uniforms in [0, 1) with 16 bits each from one hash: element i uses
// half (i & 1) of draw_u32(key, i / 2). Stochastic rounding with it is biased
// by less than 2^-16 of a step, far below fp32 noise, at half the hashing.
MURMUR_HD float draw_unit16(std::uint32_t key, std::uint32_t i) {
  return static_cast<float>((draw_u32(key, i >> 1) >> ((i & 1u) * 16)) & 0xffffu) * (1.0f / 65536.0f);
}

}  // namespace murmur::kernels
