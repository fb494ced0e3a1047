// The models murmur's trainer trains: softmax classifiers over images
// (Fashion-MNIST by default) as an MLP, a small CNN or logistic regression,
// on the CPU (CBLAS) or a CUDA device (cuBLAS).
//
// Ownership: a Model owns every buffer it uses (parameters, gradients,
// activations, scratch), all sized at construction for spec.max_batch; no
// call allocates. parameters() and gradients() are views into the model's
// own memory, valid for the model's lifetime.
// Blocking: every call runs to completion on the calling thread (the CUDA
// model works on its own stream and waits for it before returning, so its
// buffers are complete for any other stream afterwards). The CUDA model
// lives on the device current when make_model is called (cudaSetDevice
// first to choose another).
// Threads: a Model is not thread-safe; use one from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace murmur::peer::model {

struct StepResult {
  double loss = 0;  // mean loss over the batch
  int correct = 0;  // argmax predictions equal to the label
};

struct EvalResult {
  double loss_sum = 0;
  int correct = 0;
  int count = 0;
};

enum class Device { kCpu, kCuda };

const char* to_string(Device d);

struct ModelSpec {
  // "mlp" (784-256-128-10, ReLU), "mlp:H1,H2,..." (hidden sizes), "cnn"
  // (conv3x3x16 pad1 -> ReLU -> maxpool2 -> conv3x3x32 pad1 -> ReLU ->
  // maxpool2 -> dense 128 ReLU -> dense 10), "logreg" (784-10).
  std::string name = "mlp";
  Device device = Device::kCpu;
  int input_channels = 1, input_rows = 28, input_cols = 28, classes = 10;
  int max_batch = 256;  // buffers are sized for this; a larger batch is a bug (MURMUR_CHECK)
};

// The spec for a model name with the default input shape; std::invalid_argument
// naming the bad spec and listing the accepted forms.
ModelSpec parse_model_spec(const std::string& name, Device device);

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  virtual std::size_t parameter_count() const = 0;
  // All parameters in ONE contiguous buffer (host memory for kCpu, device
  // memory for kCuda), and gradients in a second one of the same size and
  // layout. The gossip layer averages this whole buffer: it holds every
  // trainable value.
  virtual std::span<float> parameters() = 0;
  virtual std::span<float> gradients() = 0;
  // He-uniform weights (bound sqrt(6 / fan_in); sqrt(3 / fan_in) for the
  // output layer, which no ReLU follows), zero biases. Deterministic in the
  // seed, and the same values on either device.
  virtual void initialize(std::uint64_t seed) = 0;
  // Forward + backward of softmax cross-entropy on a batch (x: host pointer,
  // batch * input features, images NHWC; labels: host). OVERWRITES gradients
  // with d(mean loss)/d(params); no weight decay (the optimizer adds it).
  // A label >= classes throws std::invalid_argument naming it.
  virtual StepResult train_batch(const float* x, const std::uint8_t* labels, int batch) = 0;
  // Layer-wise gradient hand-off (the gradient-averaging algorithms start
  // communicating a layer while backward computes the layers below it).
  // The sizes of the layers that have parameters, in the order of their
  // slices in gradients() (front layer first); they add up to
  // parameter_count().
  virtual std::vector<std::size_t> gradient_layer_sizes() const = 0;
  // Called by train_batch's backward pass as soon as the gradient slice of
  // parameter layer `layer` (an index into gradient_layer_sizes()) is
  // final, in backward order (last layer first), on the calling thread.
  // The CUDA model waits for its stream first, so the slice is complete
  // when the hook runs (which costs the device its lead). The hook must not
  // call back into the model; an empty function removes it.
  virtual void set_gradient_hook(std::function<void(std::size_t layer)> hook) = 0;
  // The layer-wise optimizer step (ByteScheduler's cross-iteration
  // overlap): called by train_batch's forward pass just before parameter
  // layer `layer` runs (front layer first), and once more with `layer` ==
  // gradient_layer_sizes().size() when the forward pass is done and
  // backward is next; on the calling thread, never by evaluate(). The hook
  // may write that layer's parameters (nothing has read them yet this
  // step). At the last call it may write any parameter, and returns
  // whether it did: the forward pass already read them, so the model runs
  // it again (without the hook) before the loss and backward. The other
  // calls' answers are ignored. It must not call back into the model; an
  // empty function removes it.
  virtual void set_forward_hook(std::function<bool(std::size_t layer)> hook) = 0;
  // Forward only; gradients are left alone.
  virtual EvalResult evaluate(const float* x, const std::uint8_t* labels, int batch) = 0;
  // Bytes of model-related buffers (params, grads, activations, scratch),
  // for the memory report.
  virtual std::size_t buffer_bytes() const = 0;
};

// std::invalid_argument for a bad spec; for kCuda without a CUDA build or
// without a visible device, std::runtime_error saying which.
std::unique_ptr<Model> make_model(const ModelSpec& spec);

}  // namespace murmur::peer::model
