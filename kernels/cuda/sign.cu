// Scaled sign on the device.
#include "kernels/cuda/common.cuh"

namespace murmur::kernels::cuda {
namespace {

__global__ void sum_abs(const float* in, std::size_t n, double* acc) {
  double v = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    v += fabs(double(in[i]));
  v = detail::block_sum(v);
  if (threadIdx.x == 0) atomicAdd(acc, v);
}

__global__ void pack_signs(const float* in, std::size_t n, const double* l1, float* scale, std::uint8_t* bits) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = n ? static_cast<float>(*l1 / double(n)) : 0.0f;
  const std::size_t bytes = (n + 7) / 8;
  for (std::size_t b = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; b < bytes;
       b += std::size_t(gridDim.x) * blockDim.x) {
    unsigned byte = 0;
    for (unsigned j = 0; j < 8 && b * 8 + j < n; ++j) byte |= (__float_as_uint(in[b * 8 + j]) >> 31) << j;
    bits[b] = static_cast<std::uint8_t>(byte);
  }
}

__global__ void unpack_signs(const std::uint8_t* bits, std::size_t n, float scale, float* out) {
  const std::uint32_t mag = __float_as_uint(scale) & 0x7fffffffu;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __uint_as_float(mag | (std::uint32_t((bits[i / 8] >> (i % 8)) & 1u) << 31));
}

}  // namespace

Status sign_encode(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, float* scale,
                   std::uint8_t* bits, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = sizeof(double);
    return Status::kOk;
  }
  if (scratch_bytes < sizeof(double)) return Status::kScratchTooSmall;
  auto st = detail::native(stream);
  auto* l1 = static_cast<double*>(scratch);
  if (cudaMemsetAsync(l1, 0, sizeof(double), st) != cudaSuccess) return Status::kCudaError;
  sum_abs<<<detail::blocks_for(n), detail::kThreads, 0, st>>>(in, n, l1);
  pack_signs<<<detail::blocks_for((n + 7) / 8), detail::kThreads, 0, st>>>(in, n, l1, scale, bits);
  return detail::launched();
}

Status sign_decode(void* scratch, std::size_t& scratch_bytes, const std::uint8_t* bits, std::size_t n, float scale,
                   float* out, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (n == 0) return Status::kOk;
  unpack_signs<<<detail::blocks_for(n), detail::kThreads, 0, detail::native(stream)>>>(bits, n, scale, out);
  return detail::launched();
}

}  // namespace murmur::kernels::cuda
