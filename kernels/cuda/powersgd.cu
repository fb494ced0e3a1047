// PowerSGD on the device: plain kernels for the skinny products (rank <= 64)
// and one block for Gram-Schmidt. TODO(perf): cuBLAS sgemm for large tensors.
#include "kernels/cuda/common.cuh"

namespace murmur::kernels::cuda {
namespace {

// p[i, c] = sum_j m[i, j] q[j, c]
__global__ void m_times_q(const float* m, const float* q, std::size_t rows, std::size_t cols, std::size_t rank,
                          float* p) {
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < rows * rank;
       t += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t i = t / rank, c = t % rank;
    float acc = 0;
    for (std::size_t j = 0; j < cols; ++j) acc = fmaf(m[i * cols + j], q[j * rank + c], acc);
    p[t] = acc;
  }
}

// q[j, c] = sum_i m[i, j] p[i, c]
__global__ void mt_times_p(const float* m, const float* p, std::size_t rows, std::size_t cols, std::size_t rank,
                           float* q) {
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < cols * rank;
       t += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t j = t / rank, c = t % rank;
    float acc = 0;
    for (std::size_t i = 0; i < rows; ++i) acc = fmaf(m[i * cols + j], p[i * rank + c], acc);
    q[t] = acc;
  }
}

__device__ double block_dot(const float* p, std::size_t rows, std::size_t rank, std::size_t a, std::size_t b) {
  __shared__ double result;
  double v = 0;
  for (std::size_t i = threadIdx.x; i < rows; i += blockDim.x) v += double(p[i * rank + a]) * p[i * rank + b];
  v = detail::block_sum(v);
  if (threadIdx.x == 0) result = v;
  __syncthreads();
  const double r = result;
  __syncthreads();
  return r;
}

// Modified Gram-Schmidt, one block.
__global__ void orthonormalize(float* p, std::size_t rows, std::size_t rank) {
  for (std::size_t c = 0; c < rank; ++c) {
    for (std::size_t d = 0; d < c; ++d) {
      const float f = static_cast<float>(block_dot(p, rows, rank, c, d));
      for (std::size_t i = threadIdx.x; i < rows; i += blockDim.x) p[i * rank + c] -= f * p[i * rank + d];
      __syncthreads();
    }
    const double sq = block_dot(p, rows, rank, c, c);
    const float inv = sq > 1e-30 ? static_cast<float>(1.0 / sqrt(sq)) : 0.0f;
    for (std::size_t i = threadIdx.x; i < rows; i += blockDim.x) p[i * rank + c] *= inv;
    __syncthreads();
  }
}

__global__ void expand(const float* p, const float* q, std::size_t rows, std::size_t cols, std::size_t rank,
                       float* out) {
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < rows * cols;
       t += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t i = t / cols, j = t % cols;
    float acc = 0;
    for (std::size_t c = 0; c < rank; ++c) acc = fmaf(p[i * rank + c], q[j * rank + c], acc);
    out[t] = acc;
  }
}

}  // namespace

Status powersgd_factor(void* scratch, std::size_t& scratch_bytes, const float* m, std::size_t rows, std::size_t cols,
                       std::size_t rank, float* p, float* q, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (rank == 0 || rank > 64) return Status::kInvalidArgument;
  auto st = detail::native(stream);
  m_times_q<<<detail::blocks_for(rows * rank), detail::kThreads, 0, st>>>(m, q, rows, cols, rank, p);
  orthonormalize<<<1, detail::kThreads, 0, st>>>(p, rows, rank);
  mt_times_p<<<detail::blocks_for(cols * rank), detail::kThreads, 0, st>>>(m, p, rows, cols, rank, q);
  return detail::launched();
}

Status powersgd_expand(void* scratch, std::size_t& scratch_bytes, const float* p, const float* q, std::size_t rows,
                       std::size_t cols, std::size_t rank, float* out, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (rows * cols == 0) return Status::kOk;
  expand<<<detail::blocks_for(rows * cols), detail::kThreads, 0, detail::native(stream)>>>(p, q, rows, cols, rank, out);
  return detail::launched();
}

}  // namespace murmur::kernels::cuda
