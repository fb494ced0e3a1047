// Evaluating a model on (a range of) a dataset, and moving its parameters
// between its device and host vectors (averaged models, checkpoints).
// Blocking: compute. Thread safety: none (the trainer's thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "peer/data/batcher.h"
#include "peer/data/dataset.h"
#include "peer/model/model.h"

namespace murmur::peer::train {

struct Accuracy {
  std::int64_t correct = 0;
  std::int64_t count = 0;
  double loss_sum = 0;
  double fraction() const { return count == 0 ? 0.0 : static_cast<double>(correct) / count; }
  double mean_loss() const { return count == 0 ? 0.0 : loss_sum / count; }
};

// Examples [first, first + count) in order, in batches of at most
// `batch` (<= the model's max batch).
Accuracy evaluate_range(model::Model& model, const data::ImageDataset& data, std::size_t first, std::size_t count,
                        int batch, data::Batch& scratch);

std::vector<float> read_parameters(model::Model& model);
void write_parameters(model::Model& model, std::span<const float> values);
// The same for any buffer of the model's device (the optimizer's momentum).
std::vector<float> read_device_vector(model::Device device, std::span<const float> source);
void write_device_vector(model::Device device, std::span<float> target, std::span<const float> values);

}  // namespace murmur::peer::train
