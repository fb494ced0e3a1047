// Gather and scatter on the device (top-k and random-k bodies; the index
// sets themselves are chosen on the host, see kernels/compress.h).
#include "kernels/cuda/common.cuh"

namespace murmur::kernels::cuda {
namespace {

__global__ void gather_kernel(const float* in, const std::uint32_t* idx, std::size_t k, float* vals) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < k;
       j += std::size_t(gridDim.x) * blockDim.x)
    vals[j] = in[idx[j]];
}

__global__ void scatter_kernel(const std::uint32_t* idx, const float* vals, std::size_t k, float* out, std::size_t n,
                               int* bad) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < k;
       j += std::size_t(gridDim.x) * blockDim.x) {
    if (idx[j] >= n) {
      atomicOr(bad, 1);
      continue;
    }
    out[idx[j]] = vals[j];
  }
}

}  // namespace

Status gather(void* scratch, std::size_t& scratch_bytes, const float* in, const std::uint32_t* idx, std::size_t k,
              float* vals, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (k == 0) return Status::kOk;
  gather_kernel<<<detail::blocks_for(k), detail::kThreads, 0, detail::native(stream)>>>(in, idx, k, vals);
  return detail::launched();
}

// Synchronizes `stream` to report an index >= n as kMalformed.
Status scatter(void* scratch, std::size_t& scratch_bytes, const std::uint32_t* idx, const float* vals, std::size_t k,
               float* out, std::size_t n, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = sizeof(int);
    return Status::kOk;
  }
  if (scratch_bytes < sizeof(int)) return Status::kScratchTooSmall;
  auto st = detail::native(stream);
  auto* bad = static_cast<int*>(scratch);
  if (cudaMemsetAsync(bad, 0, sizeof(int), st) != cudaSuccess ||
      cudaMemsetAsync(out, 0, n * sizeof(float), st) != cudaSuccess)
    return Status::kCudaError;
  if (k > 0) scatter_kernel<<<detail::blocks_for(k), detail::kThreads, 0, st>>>(idx, vals, k, out, n, bad);
  return detail::malformed_flag(bad, st);
}

}  // namespace murmur::kernels::cuda
