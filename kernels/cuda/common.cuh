// Helpers shared by the CUDA bodies.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/compress.h"

namespace murmur::kernels::cuda::detail {

inline constexpr int kThreads = 256;

inline unsigned blocks_for(std::size_t work) {
  std::size_t b = (work + kThreads - 1) / kThreads;
  if (b > 65535u * 16u) b = 65535u * 16u;  // grid-stride loops cover the rest
  return b == 0 ? 1u : static_cast<unsigned>(b);
}

inline Status launched() { return cudaGetLastError() == cudaSuccess ? Status::kOk : Status::kCudaError; }

inline cudaStream_t native(Stream s) { return reinterpret_cast<cudaStream_t>(s); }

// Waits for `st` and reads the device flag that a validating kernel sets
// when its input is malformed: kMalformed if set, kCudaError if the copy or
// the stream failed.
inline Status malformed_flag(const int* device_flag, cudaStream_t st) {
  int host_flag = 0;
  if (cudaMemcpyAsync(&host_flag, device_flag, sizeof(int), cudaMemcpyDeviceToHost, st) != cudaSuccess ||
      cudaStreamSynchronize(st) != cudaSuccess)
    return Status::kCudaError;
  return host_flag ? Status::kMalformed : Status::kOk;
}

// Block-wide sum of a double (blockDim.x == kThreads).
__device__ inline double block_sum(double v) {
  __shared__ double partial[kThreads / 32];
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
  __syncthreads();
  return total;  // valid in thread 0
}

}  // namespace murmur::kernels::cuda::detail
