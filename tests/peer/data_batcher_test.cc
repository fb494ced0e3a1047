// Batcher and fill_batch: each epoch covers the shard exactly once, orders
// differ between epochs and are fixed by (seed, epoch), values are normalized.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "common/check.h"
#include "peer/data/batcher.h"

namespace murmur::peer::data {
namespace {

// n images of 2 x 3 whose pixels all equal the image index mod 256 and whose
// label is the index mod 10, so a batch row tells which example it is.
ImageDataset numbered(std::size_t n) {
  ImageDataset d;
  d.rows = 2;
  d.cols = 3;
  for (std::size_t i = 0; i < n; ++i) {
    d.pixels.insert(d.pixels.end(), d.features(), static_cast<std::uint8_t>(i % 256));
    d.labels.push_back(static_cast<std::uint8_t>(i % 10));
  }
  return d;
}

float normalized(int p) { return (static_cast<float>(p) / 255.0f - 0.2860f) / 0.3530f; }

// The examples of one epoch, identified through their pixel values (n <= 256).
std::vector<int> run_epoch(Batcher& b, int epoch, std::vector<int>* sizes = nullptr) {
  b.start_epoch(epoch);
  std::vector<int> seen;
  Batch batch;
  while (b.next(batch)) {
    if (sizes) sizes->push_back(batch.size);
    EXPECT_EQ(batch.x.size(), static_cast<std::size_t>(batch.size) * 6);
    EXPECT_EQ(batch.y.size(), static_cast<std::size_t>(batch.size));
    for (int i = 0; i < batch.size; ++i) {
      const float* row = batch.x.data() + i * 6;
      const auto it = std::find_if(row, row + 6, [&](float v) { return v != row[0]; });
      EXPECT_EQ(it, row + 6) << "an example's pixels got mixed with another's";
      int example = -1;
      for (int p = 0; p < 256; ++p)
        if (std::abs(row[0] - normalized(p)) < 1e-5f) example = p;
      EXPECT_EQ(batch.y[i], example % 10);
      seen.push_back(example);
    }
  }
  return seen;
}

TEST(NormalizePixels, FashionMnistMeanAndStd) {
  const std::uint8_t pixels[] = {0, 73, 128, 255};
  float out[4];
  normalize_pixels(pixels, 4, out);
  EXPECT_NEAR(out[0], -0.810198f, 1e-5f);  // -0.2860 / 0.3530
  EXPECT_NEAR(out[1], normalized(73), 1e-6f);
  EXPECT_NEAR(out[2], 0.611787f, 1e-5f);  // (128/255 - 0.2860) / 0.3530
  EXPECT_NEAR(out[3], 2.022663f, 1e-5f);  // (1 - 0.2860) / 0.3530
}

TEST(Batcher, CoversTheShardExactlyOncePerEpoch) {
  const ImageDataset d = numbered(200);
  std::vector<std::uint32_t> shard;
  for (std::uint32_t i = 3; i < 200; i += 2) shard.push_back(i);  // 99 examples
  Batcher b(d, shard, 10, 1);
  EXPECT_EQ(b.examples(), 99u);
  EXPECT_EQ(b.steps_per_epoch(), 10);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int> sizes;
    std::vector<int> seen = run_epoch(b, epoch, &sizes);
    EXPECT_EQ(sizes, (std::vector<int>{10, 10, 10, 10, 10, 10, 10, 10, 10, 9}));
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, std::vector<int>(shard.begin(), shard.end()));
  }
}

TEST(Batcher, OrderChangesAcrossEpochsAndIsFixedBySeedAndEpoch) {
  const ImageDataset d = numbered(100);
  std::vector<std::uint32_t> all(100);
  std::iota(all.begin(), all.end(), 0u);
  Batcher a(d, all, 16, 5), b(d, all, 16, 5), c(d, all, 16, 6);
  const std::vector<int> a0 = run_epoch(a, 0), a1 = run_epoch(a, 1);
  EXPECT_NE(a0, a1);
  EXPECT_NE(a0, std::vector<int>(all.begin(), all.end())) << "not shuffled";
  // b jumps straight to epoch 1: same order as a's epoch 1.
  EXPECT_EQ(run_epoch(b, 1), a1);
  EXPECT_EQ(run_epoch(b, 0), a0);
  EXPECT_NE(run_epoch(c, 0), a0);
}

TEST(Batcher, NextReusesStorage) {
  const ImageDataset d = numbered(50);
  std::vector<std::uint32_t> all(50);
  std::iota(all.begin(), all.end(), 0u);
  Batcher b(d, all, 8, 1);
  Batch batch;
  ASSERT_TRUE(b.next(batch));
  const float* storage = batch.x.data();
  for (int epoch = 0; epoch < 2; ++epoch) {
    b.start_epoch(epoch);
    while (b.next(batch)) EXPECT_EQ(batch.x.data(), storage);
  }
  EXPECT_FALSE(b.next(batch));
}

TEST(Batcher, RejectsBadBatchSizeAndIndices) {
  const ImageDataset d = numbered(10);
  EXPECT_THROW(Batcher(d, {0, 1}, 0, 1), std::invalid_argument);
  EXPECT_THROW(Batcher(d, {0, 10}, 4, 1), InvariantError);
}

TEST(FillBatch, ConsecutiveExamplesInOrder) {
  const ImageDataset d = numbered(30);
  Batch batch;
  fill_batch(d, 25, 5, batch);
  ASSERT_EQ(batch.size, 5);
  ASSERT_EQ(batch.x.size(), 30u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(batch.y[i], (25 + i) % 10);
    for (int f = 0; f < 6; ++f) EXPECT_FLOAT_EQ(batch.x[i * 6 + f], normalized(25 + i));
  }
  EXPECT_THROW(fill_batch(d, 26, 5, batch), InvariantError);
}

}  // namespace
}  // namespace murmur::peer::data
