// An in-memory image classification dataset (Fashion-MNIST: 28 x 28 grey
// pixels, 10 classes) and the exception for faults in data files.
//
// Pixels stay uint8 (47 MB for the 60k training images); batches are
// normalized to float on the fly (batcher.h), so no float copy of the whole
// dataset is ever held.
//
// Thread-safety: a value; concurrent const use is safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace murmur::peer::data {

struct ImageDataset {
  int rows = 0, cols = 0;  // 28 x 28 for Fashion-MNIST
  int num_classes = 10;
  std::vector<std::uint8_t> pixels;  // size() * rows * cols, row-major per image
  std::vector<std::uint8_t> labels;  // size(), each < num_classes

  std::size_t size() const { return labels.size(); }
  std::size_t features() const { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols); }
};

// A missing, malformed or inconsistent data file or directory. The message
// starts with the path and says what is wrong and, where it helps, what to do.
class DataError : public std::runtime_error {
 public:
  using runtime_error::runtime_error;
};

}  // namespace murmur::peer::data
