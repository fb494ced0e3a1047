// The random-k index draw on the device: the CUDA twin of cpu::randk_indices,
// the same k-subset for the same seed bit for bit. Floyd's algorithm (the CPU
// body's, with the same draw_u32 counters from kernels/rng.h) marks a bitmap
// of n bits; the set bits are then written out in increasing order in
// parallel (popcount per word, an exclusive scan, one thread per word).
//
// TODO(perf): Floyd's draw is sequential (each pick depends on the bitmap so
// far), so it runs in a single device thread: fine for k up to ~1e5, latency
// bound beyond. A parallel-friendly draw (e.g. the k smallest of
// (draw_u32(key, i), i)) would change the index set, and so the CPU body too.
#include <algorithm>

#include <cub/device/device_scan.cuh>

#include "kernels/cuda/common.cuh"
#include "kernels/rng.h"

namespace murmur::kernels::cuda {
namespace {

__global__ void randk_floyd_kernel(std::size_t n, std::size_t k, std::uint32_t key, unsigned long long* bits) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  // Floyd: for j in [n-k, n), draw t in [0, j]; take t, or j if t is taken.
  for (std::size_t j = n - k; j < n; ++j) {
    const std::size_t t = static_cast<std::size_t>((std::uint64_t(draw_u32(key, std::uint32_t(j))) * (j + 1)) >> 32);
    const std::size_t pick = (bits[t / 64] >> (t % 64)) & 1u ? j : t;
    bits[pick / 64] |= 1ull << (pick % 64);
  }
}

__global__ void randk_count_kernel(const unsigned long long* bits, std::size_t words, std::uint32_t* counts) {
  for (std::size_t w = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; w < words;
       w += std::size_t(gridDim.x) * blockDim.x)
    counts[w] = static_cast<std::uint32_t>(__popcll(bits[w]));
}

__global__ void randk_emit_kernel(const unsigned long long* bits, std::size_t words, const std::uint32_t* offsets,
                                  std::uint32_t* idx) {
  for (std::size_t w = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; w < words;
       w += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t out = offsets[w];
    for (unsigned long long b = bits[w]; b; b &= b - 1)
      idx[out++] = static_cast<std::uint32_t>(w * 64 + (__ffsll(static_cast<long long>(b)) - 1));
  }
}

constexpr std::size_t align256(std::size_t b) { return (b + 255) & ~std::size_t(255); }

}  // namespace

Status randk_indices(void* scratch, std::size_t& scratch_bytes, std::size_t n, std::size_t k, std::uint64_t seed,
                     std::uint32_t* idx, Stream stream) {
  // Layout: the bitmap (words x 8 bytes), per-word counts and their
  // exclusive scan (words x 4 bytes each), then CUB's scan storage.
  const std::size_t words = (n + 63) / 64;
  const auto words32 = static_cast<std::uint32_t>(words);
  const std::size_t bitmap = align256(std::max<std::size_t>(words, 1) * 8);
  const std::size_t counts = align256(std::max<std::size_t>(words, 1) * 4);
  std::size_t scan = 0;
  if (cub::DeviceScan::ExclusiveSum(nullptr, scan, static_cast<const std::uint32_t*>(nullptr),
                                    static_cast<std::uint32_t*>(nullptr), words32) != cudaSuccess)
    return Status::kCudaError;
  const std::size_t need = bitmap + 2 * counts + align256(scan);
  if (scratch == nullptr) {
    scratch_bytes = need;
    return Status::kOk;
  }
  if (scratch_bytes < need) return Status::kScratchTooSmall;
  if (k > n || n >= (std::size_t(1) << 32)) return Status::kInvalidArgument;
  if (k == 0) return Status::kOk;

  auto* base = static_cast<unsigned char*>(scratch);
  auto* bits = reinterpret_cast<unsigned long long*>(base);
  auto* cnt = reinterpret_cast<std::uint32_t*>(base + bitmap);
  auto* off = reinterpret_cast<std::uint32_t*>(base + bitmap + counts);
  void* tmp = base + bitmap + 2 * counts;
  std::size_t tmp_bytes = align256(scan);
  auto st = detail::native(stream);

  if (cudaMemsetAsync(bits, 0, words * 8, st) != cudaSuccess) return Status::kCudaError;
  randk_floyd_kernel<<<1, 1, 0, st>>>(n, k, seed_key(seed), bits);
  if (detail::launched() != Status::kOk) return Status::kCudaError;
  randk_count_kernel<<<detail::blocks_for(words), detail::kThreads, 0, st>>>(bits, words, cnt);
  if (detail::launched() != Status::kOk) return Status::kCudaError;
  if (cub::DeviceScan::ExclusiveSum(tmp, tmp_bytes, static_cast<const std::uint32_t*>(cnt), off, words32, st) !=
      cudaSuccess)
    return Status::kCudaError;
  randk_emit_kernel<<<detail::blocks_for(words), detail::kThreads, 0, st>>>(bits, words, off, idx);
  return detail::launched();
}

}  // namespace murmur::kernels::cuda
