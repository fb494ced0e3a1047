#include "peer/train/evaluation.h"

#include <algorithm>
#include <stdexcept>

#include "common/check.h"
#include "kernels/memory.h"

namespace murmur::train {

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

std::vector<float> read_device_vector(model::Device device, std::span<const float> source) {
  std::vector<float> out(source.size());
  if (device == model::Device::kCpu) {
    std::copy(source.begin(), source.end(), out.begin());
  } else if (kernels::copy_device_to_host(out.data(), source.data(), source.size_bytes()) != kernels::Status::kOk) {
    throw std::runtime_error("copying model state from the GPU failed");
  }
  return out;
}

void write_device_vector(model::Device device, std::span<float> target, std::span<const float> values) {
  MURMUR_CHECK_EQ(target.size(), values.size());
  if (device == model::Device::kCpu) {
    std::copy(values.begin(), values.end(), target.begin());
  } else if (kernels::copy_host_to_device(target.data(), values.data(), values.size_bytes()) != kernels::Status::kOk) {
    throw std::runtime_error("copying model state to the GPU failed");
  }
}

std::vector<float> read_parameters(model::Model& model) {
  return read_device_vector(model.device(), model.parameters());
}

void write_parameters(model::Model& model, std::span<const float> values) {
  write_device_vector(model.device(), model.parameters(), values);
}

}  // namespace murmur::train
