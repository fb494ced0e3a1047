// Mini-batches of normalized float pixels from a uint8 ImageDataset.
//
// Normalization is Fashion-MNIST's: x = (p / 255 - 0.2860) / 0.3530, done
// per batch so the dataset stays uint8 (no float copy of it is ever made).
//
// Ownership: a Batcher borrows the dataset (which must outlive it) and owns
// its shard's index list. Thread-safety: a Batcher has one owner thread;
// different Batchers over one dataset may run on different threads.
// Nothing blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "peer/data/dataset.h"

namespace murmur::peer::data {

inline constexpr float kPixelMean = 0.2860f;
inline constexpr float kPixelStd = 0.3530f;

struct Batch {
  int size = 0;                 // examples in this batch
  std::vector<float> x;         // size * features, normalized, row-major per example
  std::vector<std::uint8_t> y;  // size labels
};

// out[i] = (pixels[i] / 255 - kPixelMean) / kPixelStd for i < count.
void normalize_pixels(const std::uint8_t* pixels, std::size_t count, float* out);

// Iterates one shard in shuffled mini-batches, epoch after epoch.
class Batcher {
 public:
  // `indices` must be < data.size() (a bug otherwise: MURMUR_CHECK);
  // batch_size >= 1 (std::invalid_argument otherwise). Ready for epoch 0.
  Batcher(const ImageDataset& data, std::vector<std::uint32_t> indices, int batch_size, std::uint64_t seed);

  // Restarts at the beginning of `epoch` in an order fixed by (seed, epoch)
  // alone, not by the epochs run before: a peer resuming at epoch 7 sees the
  // same order as one that ran epochs 0..6.
  void start_epoch(int epoch);

  // Fills `batch` with the next examples of the epoch; false (and `batch`
  // untouched) once the epoch is over. The last batch may be short. Reuses
  // batch's storage: no allocation once it has held a full batch.
  bool next(Batch& batch);

  // Examples of this epoch already taken, and a jump to such a position
  // after start_epoch (a checkpoint's: the same order, the same place).
  // seek throws std::invalid_argument past the shard's end.
  std::size_t position() const { return position_; }
  void seek(std::size_t position);

  int steps_per_epoch() const;
  std::size_t examples() const { return order_.size(); }
  int batch_size() const { return batch_size_; }

 private:
  const ImageDataset& data_;
  std::vector<std::uint32_t> indices_;  // the shard as given
  std::vector<std::uint32_t> order_;    // this epoch's permutation of indices_
  std::size_t position_ = 0;            // next entry of order_
  int batch_size_;
  std::uint64_t seed_;
};

// Evaluation batches in dataset order: fills `batch` with examples
// [first, first + count). The range must lie inside the dataset (a bug
// otherwise: MURMUR_CHECK). Reuses batch's storage.
void fill_batch(const ImageDataset& data, std::size_t first, int count, Batch& batch);

}  // namespace murmur::peer::data
