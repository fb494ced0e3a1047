// Internal: the layers a SequentialModel stacks. Each layer is written once
// against Ops, so the same code runs on the CPU and on a CUDA device.
//
// Ownership: a layer keeps raw pointers into buffers its Ops owns (its
// slices of the parameter and gradient buffers, the shared scratch, its own
// argmax indices); the model keeps the Ops alive longer than its layers.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "peer/model/ops.h"

namespace murmur::peer::model::detail {

// One sample's activation, NHWC: rows x cols x channels (a dense layer's
// output is 1 x 1 x features).
struct Shape {
  int rows = 1, cols = 1, channels = 1;
  std::size_t size() const { return std::size_t(rows) * cols * channels; }
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual Shape output_shape() const = 0;
  // Weights first, then biases, in the slices bind() hands over.
  virtual std::size_t parameter_count() const = 0;
  // An in-place layer's output buffer is its input buffer, and its backward
  // may write din == dout.
  virtual bool in_place() const = 0;
  // Floats of scratch a forward or backward needs (for the max batch).
  virtual std::size_t scratch_floats() const = 0;
  virtual void bind(float* params, float* grads, float* scratch) = 0;
  // Writes this layer's initial values to host_params (its own slice),
  // drawing element i from kernels::draw_unit(key, first + i).
  virtual void initialize(std::uint32_t key, std::uint32_t first, float* host_params) const = 0;
  virtual void forward(const float* in, float* out, int batch) = 0;
  // Overwrites this layer's gradients from dout (may clobber dout); writes
  // din unless it is null (the first layer needs no input gradient).
  virtual void backward(const float* in, const float* out, float* dout, float* din, int batch) = 0;
};

// y = x W^T + b with W outputs x inputs; weights uniform in
// +-sqrt(init_numerator / inputs) (6: He, for a layer followed by a ReLU).
std::unique_ptr<Layer> make_dense(Ops& ops, Shape in, int outputs, double init_numerator);
// 3x3 convolution, padding 1, stride 1, as im2col + GEMM over chunks of
// images; W is filters x (3 x 3 x channels) in (ky, kx, c) order; He init.
std::unique_ptr<Layer> make_conv3x3(Ops& ops, Shape in, int filters, int max_batch);
std::unique_ptr<Layer> make_relu(Ops& ops, Shape in);
std::unique_ptr<Layer> make_maxpool2(Ops& ops, Shape in, int max_batch);

// Uniform in [-bound, bound) from the counter-based generator.
void fill_uniform(std::uint32_t key, std::uint32_t first, std::size_t n, double bound, float* out);

}  // namespace murmur::peer::model::detail
