#include "peer/data/batcher.h"

#include <algorithm>
#include <array>
#include <random>
#include <span>
#include <stdexcept>
#include <string>

#include "common/check.h"
#include "peer/data/shuffle.h"

namespace murmur::peer::data {
namespace {

// Only 256 pixel values exist: a table is exact and faster than arithmetic.
constexpr std::array<float, 256> kNormalized = [] {
  std::array<float, 256> table{};
  for (int p = 0; p < 256; ++p) table[p] = static_cast<float>((p / 255.0 - double{kPixelMean}) / double{kPixelStd});
  return table;
}();

}  // namespace

void normalize_pixels(const std::uint8_t* pixels, std::size_t count, float* out) {
  for (std::size_t i = 0; i < count; ++i) out[i] = kNormalized[pixels[i]];
}

Batcher::Batcher(const ImageDataset& data, std::vector<std::uint32_t> indices, int batch_size, std::uint64_t seed)
    : data_(data), indices_(std::move(indices)), batch_size_(batch_size), seed_(seed) {
  if (batch_size < 1) throw std::invalid_argument("batch size " + std::to_string(batch_size) + ": must be >= 1");
  MURMUR_CHECK_EQ(data.pixels.size(), data.size() * data.features());
  for (std::uint32_t i : indices_) MURMUR_CHECK_LT(std::size_t{i}, data.size());
  order_.reserve(indices_.size());
  start_epoch(0);
}

void Batcher::start_epoch(int epoch) {
  MURMUR_CHECK_GE(epoch, 0);
  order_.assign(indices_.begin(), indices_.end());
  std::mt19937_64 rng(detail::mix_seed(seed_, static_cast<std::uint64_t>(epoch)));
  detail::shuffle(std::span(order_), rng);
  position_ = 0;
}

void Batcher::seek(std::size_t position) {
  if (position > order_.size())
    throw std::invalid_argument("data position " + std::to_string(position) + " is past the shard's " +
                                std::to_string(order_.size()) + " examples");
  position_ = position;
}

bool Batcher::next(Batch& batch) {
  if (position_ >= order_.size()) return false;
  const std::size_t n = std::min(order_.size() - position_, static_cast<std::size_t>(batch_size_));
  const std::size_t features = data_.features();
  batch.size = static_cast<int>(n);
  batch.x.resize(n * features);
  batch.y.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t example = order_[position_ + i];
    normalize_pixels(data_.pixels.data() + example * features, features, batch.x.data() + i * features);
    batch.y[i] = data_.labels[example];
  }
  position_ += n;
  return true;
}

int Batcher::steps_per_epoch() const { return static_cast<int>((order_.size() + batch_size_ - 1) / batch_size_); }

void fill_batch(const ImageDataset& data, std::size_t first, int count, Batch& batch) {
  MURMUR_CHECK_GE(count, 0);
  MURMUR_CHECK_LE(first + static_cast<std::size_t>(count), data.size());
  const std::size_t features = data.features();
  batch.size = count;
  batch.x.resize(static_cast<std::size_t>(count) * features);
  batch.y.resize(static_cast<std::size_t>(count));
  normalize_pixels(data.pixels.data() + first * features, batch.x.size(), batch.x.data());
  std::copy_n(data.labels.begin() + static_cast<std::ptrdiff_t>(first), count, batch.y.begin());
}

}  // namespace murmur::peer::data
