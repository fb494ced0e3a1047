// Softmax cross-entropy on the device: one thread per row (the class count
// is small), per-block sums of the loss and the hits, one atomic add each.
#include "kernels/cuda/common.cuh"
#include "kernels/layers.h"

namespace murmur::kernels::cuda {
namespace {

__global__ void xent(const float* logits, const std::uint8_t* labels, std::size_t batch, std::size_t classes,
                     float grad_scale, float* dlogits, double* loss_sum, int* correct) {
  double loss = 0, hit = 0;
  const std::size_t b = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (b < batch) {
    const float* z = logits + b * classes;
    std::size_t best = 0;
    for (std::size_t k = 1; k < classes; ++k)
      if (z[k] > z[best]) best = k;
    const double zmax = z[best];
    double sum = 0;
    for (std::size_t k = 0; k < classes; ++k) sum += exp(double(z[k]) - zmax);
    const std::size_t label = labels[b];
    loss = zmax + log(sum) - double(z[label]);
    hit = best == label ? 1.0 : 0.0;
    if (dlogits != nullptr) {
      float* d = dlogits + b * classes;
      for (std::size_t k = 0; k < classes; ++k) {
        const double p = exp(double(z[k]) - zmax) / sum;
        d[k] = static_cast<float>(grad_scale * (p - (k == label ? 1.0 : 0.0)));
      }
    }
  }
  loss = detail::block_sum(loss);
  hit = detail::block_sum(hit);
  if (threadIdx.x == 0) {
    atomicAdd(loss_sum, loss);
    atomicAdd(correct, static_cast<int>(hit));
  }
}

}  // namespace

Status softmax_xent(void* scratch, std::size_t& scratch_bytes, const float* logits, const std::uint8_t* labels,
                    std::size_t batch, std::size_t classes, float grad_scale, float* dlogits, double* loss_sum,
                    int* correct, Stream stream) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (classes == 0) return Status::kInvalidArgument;
  auto st = detail::native(stream);
  if (cudaMemsetAsync(loss_sum, 0, sizeof(double), st) != cudaSuccess ||
      cudaMemsetAsync(correct, 0, sizeof(int), st) != cudaSuccess)
    return Status::kCudaError;
  if (batch == 0) return Status::kOk;
  xent<<<detail::blocks_for(batch), detail::kThreads, 0, st>>>(logits, labels, batch, classes, grad_scale, dlogits,
                                                               loss_sum, correct);
  return detail::launched();
}

}  // namespace murmur::kernels::cuda
