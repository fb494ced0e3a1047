// Momentum SGD with classic L2 weight decay, on the model's device:
//   g = grads + weight_decay * w;  v = mu * v + g;  w -= lr * (nesterov ? g + mu * v : v)
//
// Ownership: the optimizer owns its momentum buffer (host memory for kCpu,
// device memory for kCuda), zero at construction. Blocking: step() returns
// when the update is done (on a device, after synchronizing). Not
// thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "peer/model/model.h"

namespace murmur::peer::model {

namespace detail {
class Ops;
}

struct SgdOptions {
  double momentum = 0.9;
  double weight_decay = 5e-4;
  bool nesterov = false;
};

class SgdOptimizer {
 public:
  // kCuda without a CUDA build or device: std::runtime_error.
  SgdOptimizer(std::size_t parameters, Device device, SgdOptions options);
  ~SgdOptimizer();
  SgdOptimizer(const SgdOptimizer&) = delete;
  SgdOptimizer& operator=(const SgdOptimizer&) = delete;

  // params and grads: `parameters` floats each, on the optimizer's device.
  void step(std::span<float> params, std::span<const float> grads, double learning_rate);
  // The same update on the floats [offset, offset + params.size()) of the
  // model only (one layer: the layer-wise step); params and grads are that
  // slice of the model's buffers. The update is element-wise, so stepping
  // every slice once equals one step() of the whole, bit for bit.
  void step_slice(std::span<float> params, std::span<const float> grads, std::size_t offset, double learning_rate);
  // The velocity v (same device and layout as the parameters), for checkpoints.
  std::span<float> momentum();
  const SgdOptions& options() const { return options_; }

 private:
  SgdOptions options_;
  std::unique_ptr<detail::Ops> ops_;
  std::span<float> momentum_;
};

}  // namespace murmur::peer::model
