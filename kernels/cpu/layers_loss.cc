// Softmax cross-entropy, forward and backward in one pass per row. The row
// maximum is subtracted before exponentiating and the sum is taken in
// double, so large logits neither overflow nor lose the small terms.
#include <cmath>

#include "kernels/layers.h"

namespace murmur::kernels::cpu {

Status softmax_xent(void* scratch, std::size_t& scratch_bytes, const float* logits, const std::uint8_t* labels,
                    std::size_t batch, std::size_t classes, float grad_scale, float* dlogits, double* loss_sum,
                    int* correct) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (classes == 0) return Status::kInvalidArgument;
  for (std::size_t b = 0; b < batch; ++b)
    if (labels[b] >= classes) return Status::kInvalidArgument;
  double loss = 0;
  int hits = 0;
  for (std::size_t b = 0; b < batch; ++b) {
    const float* z = logits + b * classes;
    std::size_t best = 0;
    for (std::size_t k = 1; k < classes; ++k)
      if (z[k] > z[best]) best = k;
    const double zmax = z[best];
    double sum = 0;
    for (std::size_t k = 0; k < classes; ++k) sum += std::exp(double(z[k]) - zmax);
    const std::size_t label = labels[b];
    loss += zmax + std::log(sum) - double(z[label]);
    hits += best == label ? 1 : 0;
    if (dlogits != nullptr) {
      float* d = dlogits + b * classes;
      for (std::size_t k = 0; k < classes; ++k) {
        const double p = std::exp(double(z[k]) - zmax) / sum;
        d[k] = static_cast<float>(grad_scale * (p - (k == label ? 1.0 : 0.0)));
      }
    }
  }
  *loss_sum = loss;
  *correct = hits;
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
