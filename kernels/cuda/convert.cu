// fp32 <-> fp16 / bf16 on the device, round to nearest even. Matches the CPU
// body bit for bit except for NaN payloads (the intrinsics return a canonical
// NaN).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/common.cuh"

namespace murmur::kernels::cuda {
namespace {

__global__ void to_f16(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __half_as_ushort(__float2half_rn(in[i]));
}
__global__ void from_f16(const std::uint16_t* in, float* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __half2float(__ushort_as_half(in[i]));
}
__global__ void to_bf16(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
}
__global__ void from_bf16(const std::uint16_t* in, float* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __uint_as_float(std::uint32_t(in[i]) << 16);
}

}  // namespace

#define MURMUR_ELEMENTWISE(NAME, KERNEL, TIN, TOUT)                                                                \
  Status NAME(void* scratch, std::size_t& scratch_bytes, const TIN* in, TOUT* out, std::size_t n, Stream stream) { \
    if (scratch == nullptr) {                                                                                      \
      scratch_bytes = 0;                                                                                           \
      return Status::kOk;                                                                                          \
    }                                                                                                              \
    if (n == 0) return Status::kOk;                                                                                \
    KERNEL<<<detail::blocks_for(n), detail::kThreads, 0, detail::native(stream)>>>(in, out, n);                    \
    return detail::launched();                                                                                     \
  }

MURMUR_ELEMENTWISE(f32_to_f16, to_f16, float, std::uint16_t)
MURMUR_ELEMENTWISE(f16_to_f32, from_f16, std::uint16_t, float)
MURMUR_ELEMENTWISE(f32_to_bf16, to_bf16, float, std::uint16_t)
MURMUR_ELEMENTWISE(bf16_to_f32, from_bf16, std::uint16_t, float)
#undef MURMUR_ELEMENTWISE

}  // namespace murmur::kernels::cuda
