// Bias and ReLU on the device.
#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/layers.h"

namespace murmur::kernels::cuda {
namespace {

__global__ void add_rows(float* y, const float* bias, std::size_t rows, std::size_t cols) {
  const std::size_t n = rows * cols;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] += bias[i % cols];
}

// Column tiles of 32 (coalesced along a row) times 8 row lanes; each block
// sums its share of the rows, then adds its 32 partial sums into db.
constexpr int kTileCols = 32, kTileRows = 8;

__global__ void sum_rows(const float* dy, std::size_t rows, std::size_t cols, float* db) {
  __shared__ float partial[kTileRows][kTileCols];
  const std::size_t c = blockIdx.x * std::size_t(kTileCols) + threadIdx.x;
  float acc = 0;
  if (c < cols)
    for (std::size_t r = blockIdx.y * std::size_t(kTileRows) + threadIdx.y; r < rows;
         r += std::size_t(gridDim.y) * kTileRows)
      acc += dy[r * cols + c];
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0;
    for (int k = 0; k < kTileRows; ++k) total += partial[k][threadIdx.x];
    atomicAdd(db + c, total);
  }
}

__global__ void relu(const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = fmaxf(x[i], 0.0f);
}

__global__ void relu_mask(const float* y, const float* dy, float* dx, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace

Status bias_add(void* scratch, std::size_t& scratch_bytes, float* y, const float* bias, std::size_t rows,
                std::size_t cols, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (rows * cols == 0) return Status::kOk;
  add_rows<<<detail::blocks_for(rows * cols), detail::kThreads, 0, detail::native(stream)>>>(y, bias, rows, cols);
  return detail::launched();
}

Status bias_grad(void* scratch, std::size_t& scratch_bytes, const float* dy, std::size_t rows, std::size_t cols,
                 float* db, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (cols == 0) return Status::kOk;
  auto st = detail::native(stream);
  if (cudaMemsetAsync(db, 0, cols * sizeof(float), st) != cudaSuccess) return Status::kCudaError;
  if (rows == 0) return Status::kOk;
  const std::size_t row_blocks = std::min<std::size_t>((rows + 255) / 256, 1024);
  const dim3 grid(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols), static_cast<unsigned>(row_blocks));
  sum_rows<<<grid, dim3(kTileCols, kTileRows), 0, st>>>(dy, rows, cols, db);
  return detail::launched();
}

Status relu_forward(void* scratch, std::size_t& scratch_bytes, const float* x, float* y, std::size_t n, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (n == 0) return Status::kOk;
  relu<<<detail::blocks_for(n), detail::kThreads, 0, detail::native(stream)>>>(x, y, n);
  return detail::launched();
}

Status relu_backward(void* scratch, std::size_t& scratch_bytes, const float* y, const float* dy, float* dx,
                     std::size_t n, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (n == 0) return Status::kOk;
  relu_mask<<<detail::blocks_for(n), detail::kThreads, 0, detail::native(stream)>>>(y, dy, dx, n);
  return detail::launched();
}

}  // namespace murmur::kernels::cuda
