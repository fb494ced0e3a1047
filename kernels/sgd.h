// The fused momentum-SGD update of the trainer's optimizer
// (src/peer/model/optimizer.h), with classic L2 weight decay:
//   g = grads + weight_decay * params
//   momentum = mu * momentum + g
//   params -= lr * (nesterov ? g + mu * momentum : momentum)
// Calling shape, blocking and reentrancy as in kernels/compress.h; no scratch
// (size 0). cuda:: pointers are device memory.
#pragma once

#include <cstddef>

#include "kernels/status.h"

struct CUstream_st;

namespace murmur::kernels {

using Stream = CUstream_st*;  // the same alias as kernels/compress.h

namespace cpu {
Status sgd_momentum(void* scratch, std::size_t& scratch_bytes, float* params, const float* grads, float* momentum,
                    std::size_t n, float learning_rate, float mu, float weight_decay, bool nesterov);
}  // namespace cpu

#if defined(MURMUR_HAVE_CUDA)
namespace cuda {
Status sgd_momentum(void* scratch, std::size_t& scratch_bytes, float* params, const float* grads, float* momentum,
                    std::size_t n, float learning_rate, float mu, float weight_decay, bool nesterov, Stream stream);
}  // namespace cuda
#endif

}  // namespace murmur::kernels
