// Model layer kernels: the element-wise, layout and loss arithmetic of the
// trainer's models (src/peer/model); the GEMMs are the caller's (CBLAS on the
// CPU, cuBLAS on the device). Two bodies with the same signatures:
//   murmur::kernels::cpu   (kernels/cpu/layers_*.cc, the reference)
//   murmur::kernels::cuda  (kernels/cuda/layers_*.cu, only if MURMUR_HAVE_CUDA)
//
// Calling shape, blocking and reentrancy as in kernels/compress.h: (scratch,
// scratch_bytes, ..., [stream]); a null scratch only asks for the size. None
// of these kernels needs scratch (they report 0), so any non-null pointer
// does. cpu:: runs to completion on the calling thread; cuda:: only enqueues
// on `stream`, and every pointer it takes is device memory.
//
// Layout: images are NHWC (batch, rows, cols, channels), row-major, so that
// a convolution is one GEMM over all pixels of a batch and a 3x3 window's
// channels are contiguous. Element counts below 2^32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/status.h"

struct CUstream_st;

namespace murmur::kernels {

using Stream = CUstream_st*;  // the same alias as kernels/compress.h

// Declared with kernels/compress.h as well: true when built with CUDA and a
// device is visible.
bool cuda_device_available();

#define MURMUR_LAYER_KERNEL_DECLS(STREAM_PARAM)                                                                     \
  /* y[r, c] += bias[c] for a rows x cols matrix. */                                                                \
  Status bias_add(void* scratch, std::size_t& scratch_bytes, float* y, const float* bias, std::size_t rows,         \
                  std::size_t cols STREAM_PARAM);                                                                   \
  /* db[c] = sum over r of dy[r, c] (overwrites db). */                                                             \
  Status bias_grad(void* scratch, std::size_t& scratch_bytes, const float* dy, std::size_t rows, std::size_t cols,  \
                   float* db STREAM_PARAM);                                                                         \
  /* y = max(x, 0); y == x is allowed. */                                                                           \
  Status relu_forward(void* scratch, std::size_t& scratch_bytes, const float* x, float* y,                          \
                      std::size_t n STREAM_PARAM);                                                                  \
  /* dx = y > 0 ? dy : 0, from the forward OUTPUT y; dx == dy is allowed. */                                        \
  Status relu_backward(void* scratch, std::size_t& scratch_bytes, const float* y, const float* dy, float* dx,       \
                       std::size_t n STREAM_PARAM);                                                                 \
  /* 3x3 windows, padding 1, stride 1: columns is (images*rows*cols) x      */                                      \
  /* (9*channels), one row per output pixel, taps in (ky, kx, channel)      */                                      \
  /* order; taps outside the image are 0. */                                                                        \
  Status im2col3x3(void* scratch, std::size_t& scratch_bytes, const float* image, std::size_t images,               \
                   std::size_t rows, std::size_t cols, std::size_t channels, float* columns STREAM_PARAM);          \
  /* The adjoint of im2col3x3: image = sum of every column entry that was   */                                      \
  /* copied from each pixel (overwrites image). */                                                                  \
  Status col2im3x3(void* scratch, std::size_t& scratch_bytes, const float* columns, std::size_t images,             \
                   std::size_t rows, std::size_t cols, std::size_t channels, float* image STREAM_PARAM);            \
  /* 2x2 max pooling, stride 2: y is images x rows/2 x cols/2 x channels    */                                      \
  /* (an odd last row or column is dropped); argmax[i] = the index in x of  */                                      \
  /* y[i]'s maximum (the first in window order on ties). */                                                         \
  Status maxpool2_forward(void* scratch, std::size_t& scratch_bytes, const float* x, std::size_t images,            \
                          std::size_t rows, std::size_t cols, std::size_t channels, float* y,                       \
                          std::uint32_t* argmax STREAM_PARAM);                                                      \
  /* dx = 0 except dx[argmax[i]] = dy[i] for the y_count pooled values;     */                                      \
  /* x_count = the size of dx. */                                                                                   \
  Status maxpool2_backward(void* scratch, std::size_t& scratch_bytes, const float* dy, const std::uint32_t* argmax, \
                           std::size_t y_count, float* dx, std::size_t x_count STREAM_PARAM);                       \
  /* Softmax cross-entropy on batch x classes logits (log-sum-exp after      */                                     \
  /* subtracting the row maximum, in double). *loss_sum = sum over the batch */                                     \
  /* of -log softmax[label]; *correct = rows whose first maximal logit is   */                                      \
  /* the label. Unless dlogits is null: dlogits = grad_scale * (softmax -   */                                      \
  /* onehot(label)). Labels must be below classes (cpu:: returns           */                                       \
  /* kInvalidArgument otherwise; cuda:: does not look). loss_sum and        */                                      \
  /* correct are device memory for cuda::. */                                                                       \
  Status softmax_xent(void* scratch, std::size_t& scratch_bytes, const float* logits, const std::uint8_t* labels,   \
                      std::size_t batch, std::size_t classes, float grad_scale, float* dlogits, double* loss_sum,   \
                      int* correct STREAM_PARAM);

namespace cpu {
MURMUR_LAYER_KERNEL_DECLS()
}  // namespace cpu

#if defined(MURMUR_HAVE_CUDA)
namespace cuda {
#define MURMUR_LAYER_STREAM_PARAM_ , Stream stream
MURMUR_LAYER_KERNEL_DECLS(MURMUR_LAYER_STREAM_PARAM_)
#undef MURMUR_LAYER_STREAM_PARAM_
}  // namespace cuda
#endif

#undef MURMUR_LAYER_KERNEL_DECLS

}  // namespace murmur::kernels
