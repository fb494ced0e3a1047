// QSGD on the device: the CPU body's per-element rule and draws
// (kernels/cpu/qsgd.h, rng.h), so codes match it except where the norm's
// last bits (summed in another order) move an element across a level boundary.
#include "kernels/cpu/qsgd.h"
#include "kernels/cuda/common.cuh"
#include "kernels/rng.h"

namespace murmur::kernels::cuda {
namespace {

__global__ void sum_squares(const float* in, std::size_t n, double* acc) {
  double v = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    v += double(in[i]) * in[i];
  v = detail::block_sum(v);
  if (threadIdx.x == 0) atomicAdd(acc, v);
}

// One thread per group of 8 elements, which fills exactly `b` bytes.
__global__ void quantize(const float* in, std::size_t n, unsigned s, unsigned b, std::uint32_t key, const double* sumsq,
                         float* norm, std::uint8_t* packed) {
  const double nrm = sqrt(*sumsq);
  if (blockIdx.x == 0 && threadIdx.x == 0) *norm = static_cast<float>(nrm);
  const float inv = qsgd_inv(nrm, s);  // 0: every level is 0
  const std::size_t groups = (n + 7) / 8;
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(gridDim.x) * blockDim.x) {
    unsigned long long v = 0;
    for (unsigned j = 0; j < 8; ++j) {
      const std::size_t i = g * 8 + j;
      if (i >= n) break;
      const std::uint32_t w = __float_as_uint(in[i]);
      const unsigned level =
          inv > 0 ? qsgd_level(fabsf(in[i]), inv, qsgd_draw16(key, static_cast<std::uint32_t>(i)), s) : 0u;
      v |= static_cast<unsigned long long>(level | ((w >> 31) << (b - 1))) << (j * b);
    }
    const std::size_t first = g * b;  // == packed_bytes(g * 8, b)
    const std::size_t left = n - g * 8;
    const unsigned nbytes = left >= 8 ? b : static_cast<unsigned>((left * b + 7) / 8);
    for (unsigned k = 0; k < nbytes; ++k) packed[first + k] = static_cast<std::uint8_t>(v >> (8 * k));
  }
}

__global__ void dequantize(const std::uint8_t* packed, std::size_t n, unsigned s, unsigned b, float step, float* out,
                           int* bad) {
  const std::size_t groups = (n + 7) / 8;
  const unsigned long long mask = (1ull << b) - 1;
  const unsigned level_mask = (1u << (b - 1)) - 1;
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t left = n - g * 8;
    const unsigned count = left >= 8 ? 8u : static_cast<unsigned>(left);
    const unsigned nbytes = left >= 8 ? b : (count * b + 7) / 8;
    unsigned long long v = 0;
    for (unsigned k = 0; k < nbytes; ++k) v |= static_cast<unsigned long long>(packed[g * b + k]) << (8 * k);
    for (unsigned j = 0; j < count; ++j) {
      const unsigned code = static_cast<unsigned>((v >> (j * b)) & mask);
      const unsigned level = code & level_mask;
      if (level > s) atomicOr(bad, 1);
      out[g * 8 + j] = __uint_as_float(__float_as_uint(__fmul_rn(float(level), step)) | ((code >> (b - 1)) << 31));
    }
  }
}

}  // namespace

Status qsgd_encode(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, unsigned s,
                   std::uint64_t seed, float* norm, std::uint8_t* packed, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = sizeof(double);
    return Status::kOk;
  }
  if (scratch_bytes < sizeof(double)) return Status::kScratchTooSmall;
  if (s < 1 || s > kQsgdMaxLevels || n >= (std::size_t(1) << 32)) return Status::kInvalidArgument;
  auto st = detail::native(stream);
  auto* sumsq = static_cast<double*>(scratch);
  if (cudaMemsetAsync(sumsq, 0, sizeof(double), st) != cudaSuccess) return Status::kCudaError;
  sum_squares<<<detail::blocks_for(n), detail::kThreads, 0, st>>>(in, n, sumsq);
  quantize<<<detail::blocks_for((n + 7) / 8), detail::kThreads, 0, st>>>(in, n, s, qsgd_bits(s), seed_key(seed), sumsq,
                                                                         norm, packed);
  return detail::launched();
}

Status qsgd_decode(void* scratch, std::size_t& scratch_bytes, const std::uint8_t* packed, std::size_t n, unsigned s,
                   float norm, float* out, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = sizeof(int);
    return Status::kOk;
  }
  if (scratch_bytes < sizeof(int)) return Status::kScratchTooSmall;
  if (s < 1 || s > kQsgdMaxLevels) return Status::kInvalidArgument;
  auto st = detail::native(stream);
  auto* bad = static_cast<int*>(scratch);
  if (cudaMemsetAsync(bad, 0, sizeof(int), st) != cudaSuccess) return Status::kCudaError;
  dequantize<<<detail::blocks_for((n + 7) / 8), detail::kThreads, 0, st>>>(packed, n, s, qsgd_bits(s),
                                                                           norm / static_cast<float>(s), out, bad);
  return detail::malformed_flag(bad, st);
}

}  // namespace murmur::kernels::cuda
