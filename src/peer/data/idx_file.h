// Reads an IDX pair (LeCun's MNIST format, also Fashion-MNIST's): an images
// file (magic 0x00000803: unsigned bytes, 3 dimensions N x rows x cols) and a
// labels file (magic 0x00000801: N unsigned bytes), each gzip-compressed or
// plain; zlib (gzopen/gzread) reads both.
//
// Everything is validated; a fault throws DataError whose message starts with
// the file's path and says what is wrong: no such file, not gzip and not IDX
// (bad magic, expected and found), corrupt gzip stream, truncated header or
// payload (expected N bytes, found M), trailing bytes, dimensions out of
// range, images and labels counts that disagree, a label >= num_classes (with
// its index).
//
// Allocation is bounded by the data actually present, not by the header: a
// header is checked for sane values first (at most kMaxIdxExamples examples,
// rows x cols at most kMaxIdxImageBytes), and buffers grow as bytes arrive,
// so a hostile 16-byte file cannot make the loader allocate gigabytes.
//
// Blocking: reads both files. Thread-safety: reentrant (no shared state).
#pragma once

#include <cstddef>
#include <string>

#include "peer/data/dataset.h"

namespace murmur::peer::data {

inline constexpr std::size_t kMaxIdxExamples = 100'000'000;
inline constexpr int kMaxIdxSide = 1 << 15;                // rows, cols
inline constexpr std::size_t kMaxIdxImageBytes = 1 << 20;  // rows * cols

// Labels must be below 10 (Fashion-MNIST's classes).
ImageDataset load_idx_pair(const std::string& images_path, const std::string& labels_path);
// Labels must be below num_classes (1..256; std::invalid_argument otherwise).
ImageDataset load_idx_pair(const std::string& images_path, const std::string& labels_path, int num_classes);

}  // namespace murmur::peer::data
