// Fused momentum SGD: one pass over params, grads and momentum.
#include "kernels/sgd.h"
#include "kernels/cpu/pack.h"

namespace murmur::kernels::cpu {
namespace {

// Two functions rather than a template: target_clones and templates do not
// mix well in gcc 12.
MURMUR_VECTOR_CLONES void update(float* w, const float* grads, float* v, std::size_t n, float lr, float mu, float wd) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] + wd * w[i];
    const float m = mu * v[i] + g;
    v[i] = m;
    w[i] -= lr * m;
  }
}

MURMUR_VECTOR_CLONES void update_nesterov(float* w, const float* grads, float* v, std::size_t n, float lr, float mu,
                                          float wd) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i] + wd * w[i];
    const float m = mu * v[i] + g;
    v[i] = m;
    w[i] -= lr * (g + mu * m);
  }
}

}  // namespace

Status sgd_momentum(void* scratch, std::size_t& scratch_bytes, float* params, const float* grads, float* momentum,
                    std::size_t n, float learning_rate, float mu, float weight_decay, bool nesterov) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (nesterov)
    update_nesterov(params, grads, momentum, n, learning_rate, mu, weight_decay);
  else
    update(params, grads, momentum, n, learning_rate, mu, weight_decay);
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
