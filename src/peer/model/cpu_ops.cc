// Ops on the host: CBLAS (OpenBLAS) for the GEMMs, kernels::cpu for the rest.
#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "kernels/layers.h"
#include "kernels/sgd.h"
#include "peer/model/kernel_status.h"
#include "peer/model/ops.h"

namespace murmur::peer::model::detail {
namespace {

namespace k = murmur::kernels::cpu;

class CpuOps final : public Ops {
 public:
  CpuOps() = default;
  ~CpuOps() override {
    for (void* p : blocks_) std::free(p);
  }
  CpuOps(const CpuOps&) = delete;
  CpuOps& operator=(const CpuOps&) = delete;

  Device device() const override { return Device::kCpu; }

  void* allocate(std::size_t bytes) override {
    const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    blocks_.push_back(p);
    bytes_ += rounded;
    return p;
  }
  std::size_t allocated_bytes() const override { return bytes_; }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void synchronize() override {}

  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, const float* b, float beta,
            float* c) override {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                a, trans_a ? m : k, b, trans_b ? k : n, beta, c, n);
  }

  void bias_add(float* y, const float* bias, std::size_t rows, std::size_t cols) override {
    std::size_t s = 0;
    check_kernel(k::bias_add(this, s, y, bias, rows, cols), "bias_add");
  }
  void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db) override {
    std::size_t s = 0;
    check_kernel(k::bias_grad(this, s, dy, rows, cols, db), "bias_grad");
  }
  void relu_forward(const float* x, float* y, std::size_t n) override {
    std::size_t s = 0;
    check_kernel(k::relu_forward(this, s, x, y, n), "relu_forward");
  }
  void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) override {
    std::size_t s = 0;
    check_kernel(k::relu_backward(this, s, y, dy, dx, n), "relu_backward");
  }
  void im2col3x3(const float* image, std::size_t images, std::size_t rows, std::size_t cols, std::size_t channels,
                 float* columns) override {
    std::size_t s = 0;
    check_kernel(k::im2col3x3(this, s, image, images, rows, cols, channels, columns), "im2col3x3");
  }
  void col2im3x3(const float* columns, std::size_t images, std::size_t rows, std::size_t cols, std::size_t channels,
                 float* image) override {
    std::size_t s = 0;
    check_kernel(k::col2im3x3(this, s, columns, images, rows, cols, channels, image), "col2im3x3");
  }
  void maxpool2_forward(const float* x, std::size_t images, std::size_t rows, std::size_t cols, std::size_t channels,
                        float* y, std::uint32_t* argmax) override {
    std::size_t s = 0;
    check_kernel(k::maxpool2_forward(this, s, x, images, rows, cols, channels, y, argmax), "maxpool2_forward");
  }
  void maxpool2_backward(const float* dy, const std::uint32_t* argmax, std::size_t y_count, float* dx,
                         std::size_t x_count) override {
    std::size_t s = 0;
    check_kernel(k::maxpool2_backward(this, s, dy, argmax, y_count, dx, x_count), "maxpool2_backward");
  }
  void softmax_xent(const float* logits, const std::uint8_t* labels, std::size_t batch, std::size_t classes,
                    float grad_scale, float* dlogits) override {
    std::size_t s = 0;
    check_kernel(
        k::softmax_xent(this, s, logits, labels, batch, classes, grad_scale, dlogits, &loss_.loss_sum, &loss_.correct),
        "softmax_xent");
  }
  LossResult read_loss() override { return loss_; }
  void sgd_momentum(float* params, const float* grads, float* momentum, std::size_t n, float learning_rate, float mu,
                    float weight_decay, bool nesterov) override {
    std::size_t s = 0;
    check_kernel(k::sgd_momentum(this, s, params, grads, momentum, n, learning_rate, mu, weight_decay, nesterov),
                 "sgd_momentum");
  }

  // 16 images of the second conv layer's columns are 1.8 MB: they stay in
  // L2/L3 between im2col and the GEMM that reads them.
  int conv_chunk(int max_batch) const override { return max_batch < 16 ? max_batch : 16; }

 private:
  static constexpr std::size_t kAlign = 64;
  std::vector<void*> blocks_;
  std::size_t bytes_ = 0;
  LossResult loss_;
};

}  // namespace

std::unique_ptr<Ops> make_cpu_ops() { return std::make_unique<CpuOps>(); }

}  // namespace murmur::peer::model::detail
