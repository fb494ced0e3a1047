// 3x3 convolution (padding 1) as im2col + one GEMM per chunk of images. NHWC
// makes the chunk's output rows exactly the GEMM's output rows, so nothing
// is transposed. Backward recomputes the columns rather than keeping them
// from the forward pass: one cheap memory pass instead of a buffer the size
// of every chunk.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "peer/model/layers.h"

namespace murmur::peer::model::detail {
namespace {

class Conv3x3 final : public Layer {
 public:
  Conv3x3(Ops& ops, Shape in, int filters, int max_batch)
      : ops_(ops), in_(in), filters_(filters), chunk_(ops.conv_chunk(max_batch)) {
    MURMUR_CHECK_GT(filters, 0);
    MURMUR_CHECK_GT(chunk_, 0);
  }

  Shape output_shape() const override { return Shape{in_.rows, in_.cols, filters_}; }
  std::size_t parameter_count() const override { return weights() + std::size_t(filters_); }
  bool in_place() const override { return false; }
  std::size_t scratch_floats() const override { return std::size_t(chunk_) * pixels() * taps(); }
  void bind(float* params, float* grads, float* scratch) override {
    w_ = params;
    b_ = params + weights();
    dw_ = grads;
    db_ = grads + weights();
    columns_ = scratch;
  }
  void initialize(std::uint32_t key, std::uint32_t first, float* host_params) const override {
    fill_uniform(key, first, weights(), std::sqrt(6.0 / double(taps())), host_params);
    std::memset(host_params + weights(), 0, std::size_t(filters_) * sizeof(float));
  }

  void forward(const float* in, float* out, int batch) override {
    for (int b0 = 0; b0 < batch; b0 += chunk_) {
      const int nb = std::min(chunk_, batch - b0);
      ops_.im2col3x3(in + std::size_t(b0) * in_.size(), nb, in_.rows, in_.cols, in_.channels, columns_);
      ops_.gemm(false, true, nb * pixels(), filters_, taps(), 1.0f, columns_, w_, 0.0f,
                out + std::size_t(b0) * pixels() * filters_);
    }
    ops_.bias_add(out, b_, std::size_t(batch) * pixels(), std::size_t(filters_));
  }

  void backward(const float* in, const float* /*out*/, float* dout, float* din, int batch) override {
    ops_.bias_grad(dout, std::size_t(batch) * pixels(), std::size_t(filters_), db_);
    for (int b0 = 0; b0 < batch; b0 += chunk_) {
      const int nb = std::min(chunk_, batch - b0);
      const float* dout_chunk = dout + std::size_t(b0) * pixels() * filters_;
      ops_.im2col3x3(in + std::size_t(b0) * in_.size(), nb, in_.rows, in_.cols, in_.channels, columns_);
      // dW (+)= dout^T columns: the first chunk overwrites, later ones add.
      ops_.gemm(true, false, filters_, taps(), nb * pixels(), 1.0f, dout_chunk, columns_, b0 == 0 ? 0.0f : 1.0f, dw_);
      if (din == nullptr) continue;
      // The columns are spent: reuse them for d(columns) = dout W.
      ops_.gemm(false, false, nb * pixels(), taps(), filters_, 1.0f, dout_chunk, w_, 0.0f, columns_);
      ops_.col2im3x3(columns_, nb, in_.rows, in_.cols, in_.channels, din + std::size_t(b0) * in_.size());
    }
  }

 private:
  int pixels() const { return in_.rows * in_.cols; }
  int taps() const { return 9 * in_.channels; }
  std::size_t weights() const { return std::size_t(filters_) * taps(); }

  Ops& ops_;
  Shape in_;
  int filters_;
  int chunk_;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr, *columns_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> make_conv3x3(Ops& ops, Shape in, int filters, int max_batch) {
  return std::make_unique<Conv3x3>(ops, in, filters, max_batch);
}

}  // namespace murmur::peer::model::detail
