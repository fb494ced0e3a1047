#include "peer/train/gradient_staging.h"

#include "common/check.h"
#include "peer/api/tensor_set.h"

namespace murmur::peer::train {

GradientStaging::GradientStaging(model::Device device, std::span<float> gradients,
                                 const std::vector<std::size_t>& layer_sizes)
    : gradients_(gradients) {
  offsets_.push_back(0);
  for (std::size_t n : layer_sizes) offsets_.push_back(offsets_.back() + n);
  MURMUR_CHECK_EQ(offsets_.back(), gradients.size());
  if (device == model::Device::kCuda) host_.assign(gradients.size(), 0.0f);
}

std::span<float> GradientStaging::layer_of(std::span<float> buffer, std::size_t layer) const {
  MURMUR_CHECK_LT(layer + 1, offsets_.size());
  return buffer.subspan(offsets_[layer], offsets_[layer + 1] - offsets_[layer]);
}

void GradientStaging::to_host(std::size_t layer) {
  if (!staged()) return;
  const auto from = layer_of(gradients_, layer);
  copy_to_host(layer_of(host_, layer).data(), from.data(), from.size(), /*source_on_device=*/true);
}

void GradientStaging::to_device(std::size_t layer) {
  if (!staged()) return;
  const auto to = layer_of(gradients_, layer);
  copy_from_host(to.data(), layer_of(host_, layer).data(), to.size(), /*destination_on_device=*/true);
}

void GradientStaging::all_to_device() {
  if (!staged()) return;
  copy_from_host(gradients_.data(), host_.data(), host_.size(), /*destination_on_device=*/true);
}

}  // namespace murmur::peer::train
