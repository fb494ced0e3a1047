// Fashion-MNIST (Xiao et al. 2017) from a directory holding its four
// gzip-compressed IDX files, as Debian's `dataset-fashion-mnist` package
// installs them in /usr/share/datasets/fashion-mnist:
//   train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz  (60000 examples)
//   t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz   (10000 examples)
//
// Blocking: reads the files (about 0.3 s of CPU for both sets).
// Thread-safety: reentrant.
#pragma once

#include <string>

#include "peer/data/dataset.h"

namespace murmur::peer::data {

inline constexpr const char* kDebianFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistSide = 28;
inline constexpr int kFashionMnistClasses = 10;

// $MURMUR_DATA_DIR if set and not empty, else kDebianFashionMnistDir.
std::string default_fashion_mnist_dir();

struct FashionMnist {
  ImageDataset train, test;
};

// Throws DataError naming the directory or file: a missing directory or file
// (with a hint: install `dataset-fashion-mnist`, or set MURMUR_DATA_DIR or
// --data-dir), anything load_idx_pair rejects, or images that are not 28 x 28.
FashionMnist load_fashion_mnist(const std::string& dir);

}  // namespace murmur::peer::data
