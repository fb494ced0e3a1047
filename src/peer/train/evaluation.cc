#include "peer/train/evaluation.h"

#include <algorithm>

#include "common/check.h"
#include "peer/api/tensor_set.h"

namespace murmur::peer::train {

Accuracy evaluate_range(model::Model& model, const data::ImageDataset& data, std::size_t first, std::size_t count,
                        int batch, data::Batch& scratch) {
  MURMUR_CHECK_LE(first + count, data.size());
  Accuracy total;
  for (std::size_t at = first; at < first + count;) {
    const int n = static_cast<int>(std::min<std::size_t>(batch, first + count - at));
    data::fill_batch(data, at, n, scratch);
    const auto r = model.evaluate(scratch.x.data(), scratch.y.data(), n);
    total.correct += r.correct;
    total.count += r.count;
    total.loss_sum += r.loss_sum;
    at += n;
  }
  return total;
}

// The Peer's own host/device copies (peer/api/tensor_set.h), so that one
// place turns a failed CUDA copy into an error.
std::vector<float> read_device_vector(model::Device device, std::span<const float> source) {
  std::vector<float> out(source.size());
  peer::copy_to_host(out.data(), source.data(), source.size(), device == model::Device::kCuda);
  return out;
}

void write_device_vector(model::Device device, std::span<float> target, std::span<const float> values) {
  MURMUR_CHECK_EQ(target.size(), values.size());
  peer::copy_from_host(target.data(), values.data(), values.size(), device == model::Device::kCuda);
}

std::vector<float> read_parameters(model::Model& model) {
  return read_device_vector(model.device(), model.parameters());
}

void write_parameters(model::Model& model, std::span<const float> values) {
  write_device_vector(model.device(), model.parameters(), values);
}

}  // namespace murmur::peer::train
