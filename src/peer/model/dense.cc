// Fully connected layer: two GEMMs backward (weights, inputs), one forward.
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "kernels/rng.h"
#include "peer/model/layers.h"

namespace murmur::peer::model::detail {

void fill_uniform(std::uint32_t key, std::uint32_t first, std::size_t n, double bound, float* out) {
  for (std::size_t i = 0; i < n; ++i) {
    const double u = kernels::draw_unit(key, first + static_cast<std::uint32_t>(i));
    out[i] = static_cast<float>((2.0 * u - 1.0) * bound);
  }
}

namespace {

class Dense final : public Layer {
 public:
  Dense(Ops& ops, Shape in, int outputs, double init_numerator)
      : ops_(ops), inputs_(static_cast<int>(in.size())), outputs_(outputs), init_numerator_(init_numerator) {
    MURMUR_CHECK_GT(outputs, 0);
  }

  Shape output_shape() const override { return Shape{1, 1, outputs_}; }
  std::size_t parameter_count() const override { return weights() + std::size_t(outputs_); }
  bool in_place() const override { return false; }
  std::size_t scratch_floats() const override { return 0; }
  void bind(float* params, float* grads, float* /*scratch*/) override {
    w_ = params;
    b_ = params + weights();
    dw_ = grads;
    db_ = grads + weights();
  }
  void initialize(std::uint32_t key, std::uint32_t first, float* host_params) const override {
    fill_uniform(key, first, weights(), std::sqrt(init_numerator_ / inputs_), host_params);
    std::memset(host_params + weights(), 0, std::size_t(outputs_) * sizeof(float));
  }

  void forward(const float* in, float* out, int batch) override {
    ops_.gemm(false, true, batch, outputs_, inputs_, 1.0f, in, w_, 0.0f, out);
    ops_.bias_add(out, b_, std::size_t(batch), std::size_t(outputs_));
  }

  void backward(const float* in, const float* /*out*/, float* dout, float* din, int batch) override {
    ops_.gemm(true, false, outputs_, inputs_, batch, 1.0f, dout, in, 0.0f, dw_);
    ops_.bias_grad(dout, std::size_t(batch), std::size_t(outputs_), db_);
    if (din != nullptr) ops_.gemm(false, false, batch, inputs_, outputs_, 1.0f, dout, w_, 0.0f, din);
  }

 private:
  std::size_t weights() const { return std::size_t(inputs_) * outputs_; }

  Ops& ops_;
  int inputs_, outputs_;
  double init_numerator_;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> make_dense(Ops& ops, Shape in, int outputs, double init_numerator) {
  return std::make_unique<Dense>(ops, in, outputs, init_numerator);
}

}  // namespace murmur::peer::model::detail
