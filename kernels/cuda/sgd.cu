// Fused momentum SGD on the device (kernels/sgd.h has the formula).
#include "kernels/cuda/common.cuh"
#include "kernels/sgd.h"

namespace murmur::kernels::cuda {
namespace {

template <bool kNesterov>
__global__ void update(float* w, const float* grads, float* v, std::size_t n, float lr, float mu, float wd) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float g = grads[i] + wd * w[i];
    const float m = mu * v[i] + g;
    v[i] = m;
    w[i] -= lr * (kNesterov ? g + mu * m : m);
  }
}

}  // namespace

Status sgd_momentum(void* scratch, std::size_t& scratch_bytes, float* params, const float* grads, float* momentum,
                    std::size_t n, float learning_rate, float mu, float weight_decay, bool nesterov, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (n == 0) return Status::kOk;
  auto st = detail::native(stream);
  if (nesterov)
    update<true><<<detail::blocks_for(n), detail::kThreads, 0, st>>>(params, grads, momentum, n, learning_rate, mu,
                                                                     weight_decay);
  else
    update<false><<<detail::blocks_for(n), detail::kThreads, 0, st>>>(params, grads, momentum, n, learning_rate, mu,
                                                                      weight_decay);
  return detail::launched();
}

}  // namespace murmur::kernels::cuda
