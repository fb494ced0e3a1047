// Internal: the arithmetic and memory of one device, behind one interface
// so that the layers (layers.h) are written once for the CPU and CUDA.
// CpuOps calls CBLAS and kernels::cpu; CudaOps calls cuBLAS and
// kernels::cuda on its own stream.
//
// Ownership: allocate() memory belongs to the Ops and lives until it is
// destroyed. Blocking: CudaOps only enqueues, except the calls that return
// host values (read_loss), copy_to_host and synchronize. A failing
// kernel status is a bug (MURMUR_CHECK), except a CUDA runtime error, which
// throws std::runtime_error naming the call. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "peer/model/model.h"

namespace murmur::peer::model::detail {

struct LossResult {
  double loss_sum = 0;
  int correct = 0;
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual Device device() const = 0;

  // Zero-filled, 64-byte aligned on the host.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual std::size_t allocated_bytes() const = 0;
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;

  // Row-major C (m x n) = alpha * op(A) op(B) + beta * C, with op(A) m x k
  // and op(B) k x n; leading dimensions are the stored matrices' widths.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, const float* b,
                    float beta, float* c) = 0;
  // kernels/layers.h and kernels/sgd.h, without the scratch arguments.
  virtual void bias_add(float* y, const float* bias, std::size_t rows, std::size_t cols) = 0;
  virtual void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db) = 0;
  virtual void relu_forward(const float* x, float* y, std::size_t n) = 0;
  virtual void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) = 0;
  virtual void im2col3x3(const float* image, std::size_t images, std::size_t rows, std::size_t cols,
                         std::size_t channels, float* columns) = 0;
  virtual void col2im3x3(const float* columns, std::size_t images, std::size_t rows, std::size_t cols,
                         std::size_t channels, float* image) = 0;
  virtual void maxpool2_forward(const float* x, std::size_t images, std::size_t rows, std::size_t cols,
                                std::size_t channels, float* y, std::uint32_t* argmax) = 0;
  virtual void maxpool2_backward(const float* dy, const std::uint32_t* argmax, std::size_t y_count, float* dx,
                                 std::size_t x_count) = 0;
  // labels: this device's memory. The sums go to a slot that read_loss()
  // returns, so a backward pass can be enqueued before anyone waits.
  virtual void softmax_xent(const float* logits, const std::uint8_t* labels, std::size_t batch, std::size_t classes,
                            float grad_scale, float* dlogits) = 0;
  // Waits for everything enqueued, then returns the last softmax_xent's sums.
  virtual LossResult read_loss() = 0;
  virtual void sgd_momentum(float* params, const float* grads, float* momentum, std::size_t n, float learning_rate,
                            float mu, float weight_decay, bool nesterov) = 0;

  // Images per im2col pass: small on the CPU, so that the columns stay in
  // cache; the whole batch on a device.
  virtual int conv_chunk(int max_batch) const = 0;

  template <typename T>
  T* allocate_array(std::size_t count) {
    return static_cast<T*>(allocate(count * sizeof(T)));
  }
};

std::unique_ptr<Ops> make_cpu_ops();
// std::runtime_error without a CUDA build or a visible device.
std::unique_ptr<Ops> make_cuda_ops();
std::unique_ptr<Ops> make_ops(Device device);

}  // namespace murmur::peer::model::detail
