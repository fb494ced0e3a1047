// MG-WFBP's merge rule (gradient_buckets.h) on hand-made timings: the
// extremes (free start-ups: a bucket per layer; costly ones: one bucket)
// and a case worked by hand.
#include "gossip/algorithm/gradient_buckets.h"

#include <gtest/gtest.h>

#include <vector>

namespace murmur::gossip::detail {
namespace {

bool operator==(LayerRange a, LayerRange b) { return a.first == b.first && a.last == b.last; }

// Layer l is ready (L - 1 - l) seconds after the last layer: backward
// order, one second per layer.
std::vector<double> one_second_per_layer(std::size_t layers) {
  std::vector<double> ready(layers);
  for (std::size_t l = 0; l < layers; ++l) ready[l] = static_cast<double>(layers - 1 - l);
  return ready;
}

void expect_a_partition(const std::vector<LayerRange>& buckets, std::size_t layers) {
  // In communication order: the last layer first, consecutive, all covered.
  std::size_t next_last = layers;
  for (const LayerRange& b : buckets) {
    EXPECT_EQ(b.last, next_last);
    EXPECT_LT(b.first, b.last);
    next_last = b.first;
  }
  EXPECT_EQ(next_last, 0u);
}

TEST(GradientBuckets, FreeStartUpsAndAFastLinkKeepEveryLayerApart) {
  const std::vector<std::size_t> bytes(6, 4000);
  const auto buckets = merge_gradient_buckets(one_second_per_layer(6), bytes, {0.0, 1e-9});
  ASSERT_EQ(buckets.size(), 6u);
  expect_a_partition(buckets, 6);
  EXPECT_TRUE(buckets.front() == (LayerRange{5, 6}));
}

TEST(GradientBuckets, AStartUpLongerThanTheBackwardPassMergesEverything) {
  const std::vector<std::size_t> bytes(6, 4000);
  const auto buckets = merge_gradient_buckets(one_second_per_layer(6), bytes, {100.0, 1e-9});
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_TRUE(buckets.front() == (LayerRange{0, 6}));
}

// Layer 3 ready at 0, its all-reduce busy until 5.1 s (alpha 0.1 s, 5 s a
// byte); layers 2 and 1 become ready at 1 and 2 s, while the link is still
// busy, so they wait for layer 0 and go with it in one bucket.
TEST(GradientBuckets, LayersReadyWhileTheLinkIsBusyWaitForTheNext) {
  const std::vector<std::size_t> bytes(4, 1);
  const auto buckets = merge_gradient_buckets(one_second_per_layer(4), bytes, {0.1, 5.0});
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_TRUE(buckets[0] == (LayerRange{3, 4}));
  EXPECT_TRUE(buckets[1] == (LayerRange{0, 3}));
}

TEST(GradientBuckets, SameInputsSameBuckets) {
  const std::vector<double> ready{0.9, 0.7, 0.65, 0.3, 0.28, 0.0};
  const std::vector<std::size_t> bytes{100, 4000, 50, 80000, 12, 400};
  const auto a = merge_gradient_buckets(ready, bytes, {0.05, 1e-6});
  const auto b = merge_gradient_buckets(ready, bytes, {0.05, 1e-6});
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i] == b[i]);
  expect_a_partition(a, 6);
}

}  // namespace
}  // namespace murmur::gossip::detail
