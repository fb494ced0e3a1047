// SequentialModel: allocates every buffer once, for max_batch, then runs the
// layers forward and backward over them.
//
// Buffers (all from the Ops, so host or device alike):
//   params_, grads_   one contiguous slice per layer, in layer order
//   act_[i]           layer i's output; an in-place layer shares its input's
//   grad_[2]          ping-pong buffers for the gradients flowing backward,
//                     each as large as the largest activation
//   scratch_          shared by the layers (im2col columns)
//   input_, labels_   device copies of the batch (CUDA only; the CPU model
//                     reads the caller's memory directly)
#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"
#include "kernels/rng.h"
#include "peer/model/sequential.h"

namespace murmur::peer::model::detail {
namespace {

class SequentialModel final : public Model {
 public:
  SequentialModel(const ModelSpec& spec, std::unique_ptr<Ops> ops, std::vector<std::unique_ptr<Layer>> layers)
      : spec_(spec), ops_(std::move(ops)), layers_(std::move(layers)) {
    MURMUR_CHECK(!layers_.empty());
    MURMUR_CHECK_EQ(layers_.back()->output_shape().size(), std::size_t(spec.classes));
    const std::size_t batch = std::size_t(spec.max_batch);
    const std::size_t input_size = std::size_t(spec.input_channels) * spec.input_rows * spec.input_cols;

    for (const auto& l : layers_) {
      offsets_.push_back(parameter_count_);
      parameter_count_ += l->parameter_count();
      if (l->parameter_count() > 0) ++parameter_layers_;
    }
    params_ = ops_->allocate_array<float>(parameter_count_);
    grads_ = ops_->allocate_array<float>(parameter_count_);

    std::size_t scratch = 0, largest = 0;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      scratch = std::max(scratch, layers_[i]->scratch_floats());
      largest = std::max(largest, layers_[i]->output_shape().size());
    }
    scratch_ = scratch ? ops_->allocate_array<float>(scratch) : nullptr;
    for (std::size_t i = 0; i < layers_.size(); ++i)
      layers_[i]->bind(params_ + offsets_[i], grads_ + offsets_[i], scratch_);

    if (ops_->device() != Device::kCpu) {
      input_ = ops_->allocate_array<float>(batch * input_size);
      labels_ = ops_->allocate_array<std::uint8_t>(batch);
    }
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      MURMUR_CHECK(!(i == 0 && layers_[i]->in_place()));
      act_.push_back(layers_[i]->in_place() ? act_[i - 1]
                                            : ops_->allocate_array<float>(batch * layers_[i]->output_shape().size()));
    }
    // The first layer's input gradient is never computed, so its input size
    // does not count.
    for (auto& g : grad_) g = ops_->allocate_array<float>(batch * largest);
    ops_->synchronize();  // the zero fills are done before anyone reads the buffers
  }

  std::string name() const override { return spec_.name; }
  Device device() const override { return spec_.device; }
  std::size_t parameter_count() const override { return parameter_count_; }
  std::span<float> parameters() override { return {params_, parameter_count_}; }
  std::span<float> gradients() override { return {grads_, parameter_count_}; }
  std::size_t buffer_bytes() const override { return ops_->allocated_bytes(); }

  std::vector<std::size_t> gradient_layer_sizes() const override {
    std::vector<std::size_t> sizes;
    for (const auto& l : layers_)
      if (l->parameter_count() > 0) sizes.push_back(l->parameter_count());
    return sizes;
  }

  void set_gradient_hook(std::function<void(std::size_t layer)> hook) override { gradient_hook_ = std::move(hook); }
  void set_forward_hook(std::function<bool(std::size_t layer)> hook) override { forward_hook_ = std::move(hook); }

  void initialize(std::uint64_t seed) override {
    std::vector<float> host(parameter_count_);
    const std::uint32_t key = kernels::seed_key(seed);
    for (std::size_t i = 0; i < layers_.size(); ++i)
      layers_[i]->initialize(key, static_cast<std::uint32_t>(offsets_[i]), host.data() + offsets_[i]);
    ops_->copy_from_host(params_, host.data(), host.size() * sizeof(float));
    ops_->synchronize();
  }

  StepResult train_batch(const float* x, const std::uint8_t* labels, int batch) override {
    forward(x, labels, batch, forward_hook_);
    ops_->softmax_xent(act_.back(), labels_or(labels), std::size_t(batch), std::size_t(spec_.classes),
                       1.0f / static_cast<float>(batch), grad_[0]);
    backward(batch);
    const LossResult r = ops_->read_loss();  // waits for the backward pass too
    return StepResult{r.loss_sum / batch, r.correct};
  }

  EvalResult evaluate(const float* x, const std::uint8_t* labels, int batch) override {
    forward(x, labels, batch, {});
    ops_->softmax_xent(act_.back(), labels_or(labels), std::size_t(batch), std::size_t(spec_.classes), 0.0f, nullptr);
    const LossResult r = ops_->read_loss();
    return EvalResult{r.loss_sum, r.correct, batch};
  }

 private:
  // Checks the batch, stages it on the device if need be, runs the layers;
  // `hook` (may be empty) before each parameter layer and after the last
  // (model.h: set_forward_hook), and the layers again if it says so.
  void forward(const float* x, const std::uint8_t* labels, int batch, const std::function<bool(std::size_t)>& hook) {
    MURMUR_CHECK_GT(batch, 0);
    MURMUR_CHECK_LE(batch, spec_.max_batch);
    MURMUR_CHECK(x != nullptr && labels != nullptr);
    for (int b = 0; b < batch; ++b)
      if (labels[b] >= spec_.classes)
        throw std::invalid_argument("label " + std::to_string(labels[b]) + " at batch position " + std::to_string(b) +
                                    " is not below model " + spec_.name + "'s " + std::to_string(spec_.classes) +
                                    " classes");
    input_used_ = x;
    if (input_ != nullptr) {
      const std::size_t n = std::size_t(batch) * spec_.input_channels * spec_.input_rows * spec_.input_cols;
      ops_->copy_from_host(input_, x, n * sizeof(float));
      ops_->copy_from_host(labels_, labels, std::size_t(batch));
      input_used_ = input_;
    }
    if (run_layers(batch, hook)) run_layers(batch, {});
  }

  // The layers forward over input_used_; `hook` (may be empty) before each
  // parameter layer and after the last, whose answer is returned.
  bool run_layers(int batch, const std::function<bool(std::size_t)>& hook) {
    std::size_t parameter_layer = 0;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      if (hook && layers_[i]->parameter_count() > 0) hook(parameter_layer++);
      layers_[i]->forward(i == 0 ? input_used_ : act_[i - 1], act_[i], batch);
    }
    return hook && hook(parameter_layers_);
  }

  // d(loss)/d(logits) is in grad_[0]; walks the layers back, alternating
  // the two gradient buffers (an in-place layer stays on the one it got).
  // Each layer with parameters is handed to the gradient hook as soon as
  // its backward has written them: the parameter layers are counted down
  // from the last.
  void backward(int batch) {
    int cur = 0;
    std::size_t parameter_layer = parameter_layers_;
    for (std::size_t i = layers_.size(); i-- > 0;) {
      Layer& l = *layers_[i];
      float* dout = grad_[cur];
      float* din = i == 0 ? nullptr : (l.in_place() ? dout : grad_[1 - cur]);
      l.backward(i == 0 ? input_used_ : act_[i - 1], act_[i], dout, din, batch);
      if (!l.in_place()) cur = 1 - cur;
      if (l.parameter_count() > 0 && gradient_hook_) {
        if (ops_->device() != Device::kCpu) ops_->synchronize();
        gradient_hook_(--parameter_layer);
      }
    }
  }

  const std::uint8_t* labels_or(const std::uint8_t* host_labels) const {
    return labels_ != nullptr ? labels_ : host_labels;
  }

  ModelSpec spec_;
  std::unique_ptr<Ops> ops_;  // first: outlives the layers that point into it
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::size_t> offsets_;
  std::size_t parameter_count_ = 0;
  std::size_t parameter_layers_ = 0;  // layers with parameters
  float* params_ = nullptr;
  float* grads_ = nullptr;
  float* scratch_ = nullptr;
  float* input_ = nullptr;
  std::uint8_t* labels_ = nullptr;
  const float* input_used_ = nullptr;  // this step's input: the caller's or input_
  std::vector<float*> act_;
  float* grad_[2] = {nullptr, nullptr};
  std::function<void(std::size_t)> gradient_hook_;
  std::function<bool(std::size_t)> forward_hook_;
};

}  // namespace

std::unique_ptr<Model> make_sequential(const ModelSpec& spec, std::unique_ptr<Ops> ops,
                                       std::vector<std::unique_ptr<Layer>> layers) {
  return std::make_unique<SequentialModel>(spec, std::move(ops), std::move(layers));
}

}  // namespace murmur::peer::model::detail
