// Ops on a CUDA device: cuBLAS for the GEMMs, kernels::cuda for the rest,
// everything on one stream of this Ops. Built only with MURMUR_HAVE_CUDA.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"
#include "kernels/layers.h"
#include "kernels/sgd.h"
#include "peer/model/kernel_status.h"
#include "peer/model/ops.h"

namespace murmur::peer::model::detail {
namespace {

namespace k = murmur::kernels::cuda;

void check_cuda(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(err));
}

void check_cublas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: cuBLAS status " + std::to_string(int(s)));
}

// RAII owners, one per handle, declared in CudaOps in creation order.
struct StreamOwner {
  cudaStream_t stream = nullptr;
  StreamOwner() { check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~StreamOwner() { cudaStreamDestroy(stream); }
  StreamOwner(const StreamOwner&) = delete;
  StreamOwner& operator=(const StreamOwner&) = delete;
};

struct BlasOwner {
  cublasHandle_t handle = nullptr;
  explicit BlasOwner(cudaStream_t stream) {
    check_cublas(cublasCreate(&handle), "cublasCreate");
    check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  }
  ~BlasOwner() { cublasDestroy(handle); }
  BlasOwner(const BlasOwner&) = delete;
  BlasOwner& operator=(const BlasOwner&) = delete;
};

// Device blocks freed together; the pinned host slot of the loss sums.
struct DeviceBlocks {
  std::vector<void*> blocks;
  std::size_t bytes = 0;
  DeviceBlocks() = default;
  ~DeviceBlocks() {
    for (void* p : blocks) cudaFree(p);
  }
  DeviceBlocks(const DeviceBlocks&) = delete;
  DeviceBlocks& operator=(const DeviceBlocks&) = delete;
};

struct PinnedLoss {
  double* loss_sum = nullptr;
  int* correct = nullptr;
  void* block = nullptr;
  PinnedLoss() {
    check_cuda(cudaMallocHost(&block, 16), "cudaMallocHost");
    loss_sum = static_cast<double*>(block);
    correct = reinterpret_cast<int*>(static_cast<char*>(block) + 8);
  }
  ~PinnedLoss() { cudaFreeHost(block); }
  PinnedLoss(const PinnedLoss&) = delete;
  PinnedLoss& operator=(const PinnedLoss&) = delete;
};

class CudaOps final : public Ops {
 public:
  CudaOps() : blas_(stream_.stream) {
    auto* slot = static_cast<char*>(allocate(16));
    loss_sum_ = reinterpret_cast<double*>(slot);
    correct_ = reinterpret_cast<int*>(slot + 8);
  }

  Device device() const override { return Device::kCuda; }

  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    const std::size_t rounded = (bytes + 255) / 256 * 256;
    check_cuda(cudaMalloc(&p, rounded == 0 ? 256 : rounded), "cudaMalloc");
    memory_.blocks.push_back(p);
    memory_.bytes += rounded;
    check_cuda(cudaMemsetAsync(p, 0, rounded, st()), "cudaMemsetAsync");
    return p;
  }
  std::size_t allocated_bytes() const override { return memory_.bytes; }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    // From pageable memory this returns once src has been read, so the
    // caller may reuse it. TODO(perf): a pinned staging buffer.
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st()), "cudaMemcpyAsync (to device)");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st()), "cudaMemcpyAsync (to host)");
    synchronize();
  }
  void synchronize() override { check_cuda(cudaStreamSynchronize(st()), "cudaStreamSynchronize"); }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap
  // the operands, keep each one's transpose flag.
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, const float* b, float beta,
            float* c) override {
    check_cublas(cublasSgemm(blas_.handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n,
                             m, k, &alpha, b, trans_b ? k : n, a, trans_a ? m : k, &beta, c, n),
                 "cublasSgemm");
  }

  void bias_add(float* y, const float* bias, std::size_t rows, std::size_t cols) override {
    std::size_t s = 0;
    check_kernel(k::bias_add(this, s, y, bias, rows, cols, stream()), "bias_add");
  }
  void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db) override {
    std::size_t s = 0;
    check_kernel(k::bias_grad(this, s, dy, rows, cols, db, stream()), "bias_grad");
  }
  void relu_forward(const float* x, float* y, std::size_t n) override {
    std::size_t s = 0;
    check_kernel(k::relu_forward(this, s, x, y, n, stream()), "relu_forward");
  }
  void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) override {
    std::size_t s = 0;
    check_kernel(k::relu_backward(this, s, y, dy, dx, n, stream()), "relu_backward");
  }
  void im2col3x3(const float* image, std::size_t images, std::size_t rows, std::size_t cols, std::size_t channels,
                 float* columns) override {
    std::size_t s = 0;
    check_kernel(k::im2col3x3(this, s, image, images, rows, cols, channels, columns, stream()), "im2col3x3");
  }
  void col2im3x3(const float* columns, std::size_t images, std::size_t rows, std::size_t cols, std::size_t channels,
                 float* image) override {
    std::size_t s = 0;
    check_kernel(k::col2im3x3(this, s, columns, images, rows, cols, channels, image, stream()), "col2im3x3");
  }
  void maxpool2_forward(const float* x, std::size_t images, std::size_t rows, std::size_t cols, std::size_t channels,
                        float* y, std::uint32_t* argmax) override {
    std::size_t s = 0;
    check_kernel(k::maxpool2_forward(this, s, x, images, rows, cols, channels, y, argmax, stream()),
                 "maxpool2_forward");
  }
  void maxpool2_backward(const float* dy, const std::uint32_t* argmax, std::size_t y_count, float* dx,
                         std::size_t x_count) override {
    std::size_t s = 0;
    check_kernel(k::maxpool2_backward(this, s, dy, argmax, y_count, dx, x_count, stream()), "maxpool2_backward");
  }
  void softmax_xent(const float* logits, const std::uint8_t* labels, std::size_t batch, std::size_t classes,
                    float grad_scale, float* dlogits) override {
    std::size_t s = 0;
    check_kernel(
        k::softmax_xent(this, s, logits, labels, batch, classes, grad_scale, dlogits, loss_sum_, correct_, stream()),
        "softmax_xent");
    check_cuda(cudaMemcpyAsync(pinned_.block, loss_sum_, 16, cudaMemcpyDeviceToHost, st()), "cudaMemcpyAsync (loss)");
  }
  LossResult read_loss() override {
    synchronize();
    return LossResult{*pinned_.loss_sum, *pinned_.correct};
  }
  void sgd_momentum(float* params, const float* grads, float* momentum, std::size_t n, float learning_rate, float mu,
                    float weight_decay, bool nesterov) override {
    std::size_t s = 0;
    check_kernel(
        k::sgd_momentum(this, s, params, grads, momentum, n, learning_rate, mu, weight_decay, nesterov, stream()),
        "sgd_momentum");
  }

  int conv_chunk(int max_batch) const override { return max_batch; }

 private:
  cudaStream_t st() const { return stream_.stream; }
  kernels::Stream stream() const { return reinterpret_cast<kernels::Stream>(stream_.stream); }

  // Creation order; destroyed in reverse (memory before the stream it was
  // cleared on).
  StreamOwner stream_;
  BlasOwner blas_;
  PinnedLoss pinned_;
  DeviceBlocks memory_;
  double* loss_sum_ = nullptr;  // in memory_: [double loss_sum][int correct]
  int* correct_ = nullptr;
};

}  // namespace

std::unique_ptr<Ops> make_cuda_ops() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(
        std::string("device cuda asked for, but no CUDA device is usable here (cudaGetDeviceCount: ") +
        cudaGetErrorString(err) + ")");
  }
  if (count == 0) throw std::runtime_error("device cuda asked for, but no CUDA device is visible");
  return std::make_unique<CudaOps>();
}

}  // namespace murmur::peer::model::detail
