// The parameter-free layers: ReLU (in place) and 2x2 max pooling.
#include "common/check.h"
#include "peer/model/layers.h"

namespace murmur::peer::model::detail {
namespace {

class Relu final : public Layer {
 public:
  explicit Relu(Ops& ops, Shape in) : ops_(ops), shape_(in) {}
  Shape output_shape() const override { return shape_; }
  std::size_t parameter_count() const override { return 0; }
  bool in_place() const override { return true; }
  std::size_t scratch_floats() const override { return 0; }
  void bind(float*, float*, float*) override {}
  void initialize(std::uint32_t, std::uint32_t, float*) const override {}
  void forward(const float* in, float* out, int batch) override {
    ops_.relu_forward(in, out, std::size_t(batch) * shape_.size());
  }
  void backward(const float* /*in*/, const float* out, float* dout, float* din, int batch) override {
    if (din != nullptr) ops_.relu_backward(out, dout, din, std::size_t(batch) * shape_.size());
  }

 private:
  Ops& ops_;
  Shape shape_;
};

class MaxPool2 final : public Layer {
 public:
  MaxPool2(Ops& ops, Shape in, int max_batch) : ops_(ops), in_(in), out_{in.rows / 2, in.cols / 2, in.channels} {
    MURMUR_CHECK_GT(out_.size(), 0u);
    argmax_ = ops.allocate_array<std::uint32_t>(std::size_t(max_batch) * out_.size());
  }
  Shape output_shape() const override { return out_; }
  std::size_t parameter_count() const override { return 0; }
  bool in_place() const override { return false; }
  std::size_t scratch_floats() const override { return 0; }
  void bind(float*, float*, float*) override {}
  void initialize(std::uint32_t, std::uint32_t, float*) const override {}
  void forward(const float* in, float* out, int batch) override {
    ops_.maxpool2_forward(in, batch, in_.rows, in_.cols, in_.channels, out, argmax_);
  }
  void backward(const float* /*in*/, const float* /*out*/, float* dout, float* din, int batch) override {
    if (din != nullptr)
      ops_.maxpool2_backward(dout, argmax_, std::size_t(batch) * out_.size(), din, std::size_t(batch) * in_.size());
  }

 private:
  Ops& ops_;
  Shape in_, out_;
  std::uint32_t* argmax_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> make_relu(Ops& ops, Shape in) { return std::make_unique<Relu>(ops, in); }

std::unique_ptr<Layer> make_maxpool2(Ops& ops, Shape in, int max_batch) {
  return std::make_unique<MaxPool2>(ops, in, max_batch);
}

}  // namespace murmur::peer::model::detail
