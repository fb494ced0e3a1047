// Top-k by magnitude on the device: the CUDA twin of cpu::topk_select, same
// output bit for bit (the k largest keys, ties at the k-th key broken towards
// the lowest indices, written in increasing index order).
//
// Keys are the bits of |x| as uint32 (as on the CPU: monotone for
// non-negative floats, NaN above inf). A stable descending radix sort of
// (key, index) pairs puts equal keys in index order, so its first k pairs are
// exactly the CPU's set; a second radix sort of those k indices gives the
// index order, and a gather the values. The seed only steers the CPU's
// sampling shortcut and does not change the result, so it is unused here.
//
// TODO(perf): a full sort of n pairs does ~4x the memory traffic of a radix
// select (histogram passes to find the k-th key, then one compaction with
// cub::DeviceSelect and a fix-up on the ties at the k-th key).
#include <algorithm>
#include <bit>

#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/common.cuh"

namespace murmur::kernels::cuda {
namespace {

__global__ void topk_keys_kernel(const float* in, std::size_t n, std::uint32_t* keys, std::uint32_t* pos) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    keys[i] = __float_as_uint(in[i]) & 0x7fffffffu;
    pos[i] = static_cast<std::uint32_t>(i);
  }
}

__global__ void topk_gather_kernel(const float* in, const std::uint32_t* idx, std::size_t k, float* vals) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < k;
       j += std::size_t(gridDim.x) * blockDim.x)
    vals[j] = in[idx[j]];
}

constexpr std::size_t align256(std::size_t b) { return (b + 255) & ~std::size_t(255); }

// Keys are 31 bits wide (the sign is cleared): sort on bits [0, 31).
constexpr int kKeyBits = 31;

}  // namespace

Status topk_select(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, std::size_t k,
                   std::uint64_t /*seed*/, std::uint32_t* idx, float* vals, Stream stream) {
  // Layout: keys[2][n], positions[2][n] (the sort's double buffers), then
  // CUB's temporary storage, shared by both sorts.
  const auto n32 = static_cast<std::uint32_t>(n);
  const auto k32 = static_cast<std::uint32_t>(k);
  // The index sort needs only the bits an index in [0, n) can have.
  const int index_bits = n > 1 ? static_cast<int>(std::bit_width(std::uint64_t(n - 1))) : 1;
  const std::size_t array = align256(std::max<std::size_t>(n, 1) * sizeof(std::uint32_t));
  std::size_t sort_pairs = 0, sort_keys = 0;
  {
    cub::DoubleBuffer<std::uint32_t> dk(nullptr, nullptr), dv(nullptr, nullptr);
    if (cub::DeviceRadixSort::SortPairsDescending(nullptr, sort_pairs, dk, dv, n32, 0, kKeyBits) != cudaSuccess ||
        cub::DeviceRadixSort::SortKeys(nullptr, sort_keys, static_cast<const std::uint32_t*>(nullptr),
                                       static_cast<std::uint32_t*>(nullptr), k32, 0, index_bits) != cudaSuccess)
      return Status::kCudaError;
  }
  const std::size_t temp = align256(std::max(sort_pairs, sort_keys));
  const std::size_t need = 4 * array + temp;
  if (scratch == nullptr) {
    scratch_bytes = need;
    return Status::kOk;
  }
  if (scratch_bytes < need) return Status::kScratchTooSmall;
  if (k > n || n >= (std::size_t(1) << 32)) return Status::kInvalidArgument;
  if (k == 0) return Status::kOk;

  auto* base = static_cast<unsigned char*>(scratch);
  auto* keys0 = reinterpret_cast<std::uint32_t*>(base);
  auto* keys1 = reinterpret_cast<std::uint32_t*>(base + array);
  auto* pos0 = reinterpret_cast<std::uint32_t*>(base + 2 * array);
  auto* pos1 = reinterpret_cast<std::uint32_t*>(base + 3 * array);
  void* tmp = base + 4 * array;
  auto st = detail::native(stream);

  topk_keys_kernel<<<detail::blocks_for(n), detail::kThreads, 0, st>>>(in, n, keys0, pos0);
  if (detail::launched() != Status::kOk) return Status::kCudaError;

  cub::DoubleBuffer<std::uint32_t> dk(keys0, keys1), dv(pos0, pos1);
  std::size_t tmp_bytes = temp;
  if (cub::DeviceRadixSort::SortPairsDescending(tmp, tmp_bytes, dk, dv, n32, 0, kKeyBits, st) != cudaSuccess)
    return Status::kCudaError;
  // The first k positions, by key, into index order, straight into idx.
  tmp_bytes = temp;
  if (cub::DeviceRadixSort::SortKeys(tmp, tmp_bytes, static_cast<const std::uint32_t*>(dv.Current()), idx, k32, 0,
                                     index_bits, st) != cudaSuccess)
    return Status::kCudaError;
  topk_gather_kernel<<<detail::blocks_for(k), detail::kThreads, 0, st>>>(in, idx, k, vals);
  return detail::launched();
}

}  // namespace murmur::kernels::cuda
