// im2col / col2im (3x3, padding 1) and 2x2 max pooling on NHWC images, one
// thread per output element. col2im gathers the nine taps that read each
// pixel instead of scattering into it, so it needs no atomics.
#include "kernels/cuda/common.cuh"
#include "kernels/layers.h"

namespace murmur::kernels::cuda {
namespace {

__global__ void im2col(const float* image, std::size_t images, std::size_t rows, std::size_t cols, std::size_t channels,
                       float* columns) {
  const std::size_t row_len = 9 * channels;
  const std::size_t n_out = images * rows * cols * row_len;
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < n_out;
       t += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t pixel = t / row_len, rem = t % row_len;
    const std::size_t tap = rem / channels, c = rem % channels;
    const std::size_t x = pixel % cols, y = (pixel / cols) % rows, n = pixel / (rows * cols);
    const std::size_t sy = y + tap / 3 - 1, sx = x + tap % 3 - 1;  // wraps past 0
    columns[t] = (sy < rows && sx < cols) ? image[((n * rows + sy) * cols + sx) * channels + c] : 0.0f;
  }
}

__global__ void col2im(const float* columns, std::size_t images, std::size_t rows, std::size_t cols,
                       std::size_t channels, float* image) {
  const std::size_t row_len = 9 * channels;
  const std::size_t n_img = images * rows * cols * channels;
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < n_img;
       t += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t c = t % channels, pixel = t / channels;
    const std::size_t sx = pixel % cols, sy = (pixel / cols) % rows, n = pixel / (rows * cols);
    float acc = 0;
    for (std::size_t ky = 0; ky < 3; ++ky)
      for (std::size_t kx = 0; kx < 3; ++kx) {
        const std::size_t y = sy + 1 - ky, x = sx + 1 - kx;  // the pixel whose tap (ky, kx) reads us
        if (y < rows && x < cols) acc += columns[((n * rows + y) * cols + x) * row_len + (ky * 3 + kx) * channels + c];
      }
    image[t] = acc;
  }
}

__global__ void pool(const float* x, std::size_t images, std::size_t rows, std::size_t cols, std::size_t channels,
                     float* y, std::uint32_t* argmax) {
  const std::size_t out_rows = rows / 2, out_cols = cols / 2;
  const std::size_t n_out = images * out_rows * out_cols * channels;
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < n_out;
       t += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t c = t % channels, pixel = t / channels;
    const std::size_t ox = pixel % out_cols, oy = (pixel / out_cols) % out_rows;
    const std::size_t n = pixel / (out_rows * out_cols);
    const std::size_t p00 = ((n * rows + 2 * oy) * cols + 2 * ox) * channels + c;
    const std::size_t p01 = p00 + channels, p10 = p00 + cols * channels, p11 = p10 + channels;
    std::size_t best = p00;
    if (x[p01] > x[best]) best = p01;
    if (x[p10] > x[best]) best = p10;
    if (x[p11] > x[best]) best = p11;
    y[t] = x[best];
    argmax[t] = static_cast<std::uint32_t>(best);
  }
}

__global__ void unpool(const float* dy, const std::uint32_t* argmax, std::size_t y_count, float* dx) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < y_count;
       i += std::size_t(gridDim.x) * blockDim.x)
    dx[argmax[i]] = dy[i];  // windows do not overlap: no two writes collide
}

}  // namespace

Status im2col3x3(void* scratch, std::size_t& scratch_bytes, const float* image, std::size_t images, std::size_t rows,
                 std::size_t cols, std::size_t channels, float* columns, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  const std::size_t n = images * rows * cols * 9 * channels;
  if (n == 0) return Status::kOk;
  im2col<<<detail::blocks_for(n), detail::kThreads, 0, detail::native(stream)>>>(image, images, rows, cols, channels,
                                                                                 columns);
  return detail::launched();
}

Status col2im3x3(void* scratch, std::size_t& scratch_bytes, const float* columns, std::size_t images, std::size_t rows,
                 std::size_t cols, std::size_t channels, float* image, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  const std::size_t n = images * rows * cols * channels;
  if (n == 0) return Status::kOk;
  col2im<<<detail::blocks_for(n), detail::kThreads, 0, detail::native(stream)>>>(columns, images, rows, cols, channels,
                                                                                 image);
  return detail::launched();
}

Status maxpool2_forward(void* scratch, std::size_t& scratch_bytes, const float* x, std::size_t images, std::size_t rows,
                        std::size_t cols, std::size_t channels, float* y, std::uint32_t* argmax, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  const std::size_t n = images * (rows / 2) * (cols / 2) * channels;
  if (n == 0) return Status::kOk;
  pool<<<detail::blocks_for(n), detail::kThreads, 0, detail::native(stream)>>>(x, images, rows, cols, channels, y,
                                                                               argmax);
  return detail::launched();
}

Status maxpool2_backward(void* scratch, std::size_t& scratch_bytes, const float* dy, const std::uint32_t* argmax,
                         std::size_t y_count, float* dx, std::size_t x_count, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  auto st = detail::native(stream);
  if (x_count > 0 && cudaMemsetAsync(dx, 0, x_count * sizeof(float), st) != cudaSuccess) return Status::kCudaError;
  if (y_count == 0) return Status::kOk;
  unpool<<<detail::blocks_for(y_count), detail::kThreads, 0, st>>>(dy, argmax, y_count, dx);
  return detail::launched();
}

}  // namespace murmur::kernels::cuda
