// Partition specs and the shards they produce: disjoint covers, non-empty
// shards, iid sizes, label skew that follows alpha, determinism by seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "peer/data/partition.h"

namespace murmur::peer::data {
namespace {

using Shards = std::vector<std::vector<std::uint32_t>>;

// Fashion-MNIST's shape: 6000 examples of each of 10 classes, interleaved.
std::vector<std::uint8_t> balanced_labels(int per_class = 6000, int classes = 10) {
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(per_class) * classes);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::uint8_t>(i % classes);
  std::mt19937_64 rng(7);
  std::shuffle(labels.begin(), labels.end(), rng);
  return labels;
}

void expect_disjoint_cover(const Shards& shards, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& shard : shards) {
    EXPECT_FALSE(shard.empty());
    EXPECT_TRUE(std::is_sorted(shard.begin(), shard.end()));
    for (std::uint32_t i : shard) {
      ASSERT_LT(i, n);
      ++seen[i];
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(n))
      << "some example is missing or appears twice";
}

// Mean over peers of the total-variation distance between the peer's label
// distribution and the global (uniform) one: 0 for perfectly iid shards,
// close to 0.9 when each peer holds a single class of ten.
double mean_label_skew(const Shards& shards, const std::vector<std::uint8_t>& labels, int classes) {
  double total = 0;
  for (const auto& shard : shards) {
    std::vector<double> h(classes, 0.0);
    for (std::uint32_t i : shard) h[labels[i]] += 1;
    double tv = 0;
    for (double c : h) tv += std::abs(c / static_cast<double>(shard.size()) - 1.0 / classes);
    total += tv / 2;
  }
  return total / static_cast<double>(shards.size());
}

TEST(ParsePartition, AcceptsIidAndDirichlet) {
  EXPECT_EQ(parse_partition("iid").kind, PartitionSpec::Kind::kIid);
  const PartitionSpec d = parse_partition("dirichlet:0.3");
  EXPECT_EQ(d.kind, PartitionSpec::Kind::kDirichlet);
  EXPECT_DOUBLE_EQ(d.alpha, 0.3);
  EXPECT_DOUBLE_EQ(parse_partition("dirichlet:1e3").alpha, 1000.0);
}

TEST(ParsePartition, RejectsOtherSpecsNamingThem) {
  for (const char* bad : {"", "IID", "iid ", "dirichlet", "dirichlet:", "dirichlet:0", "dirichlet:-1", "dirichlet:abc",
                          "dirichlet:0.3x", "dirichlet:inf", "dirichlet:nan", "shards:2"}) {
    try {
      parse_partition(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + bad + "\""), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("dirichlet:<alpha>"), std::string::npos) << e.what();
    }
  }
}

TEST(ParsePartition, DescribeRoundTrips) {
  EXPECT_EQ(describe(parse_partition("iid")), "iid");
  EXPECT_EQ(describe(parse_partition("dirichlet:0.3")), "dirichlet:0.3");
  EXPECT_EQ(describe(parse_partition("dirichlet:1000")), "dirichlet:1000");
  EXPECT_EQ(describe(PartitionSpec{PartitionSpec::Kind::kDirichlet, 0.05}), "dirichlet:0.05");
}

TEST(Partition, IidIsADisjointCoverWithSizesWithinOne) {
  const auto labels = balanced_labels();
  for (int peers : {1, 3, 7, 8, 16}) {
    const Shards shards = partition({}, labels, 10, peers, 42);
    ASSERT_EQ(shards.size(), static_cast<std::size_t>(peers));
    expect_disjoint_cover(shards, labels.size());
    const auto [lo, hi] = std::minmax_element(shards.begin(), shards.end(),
                                              [](const auto& a, const auto& b) { return a.size() < b.size(); });
    EXPECT_LE(hi->size() - lo->size(), 1u) << peers << " peers";
  }
  EXPECT_LT(mean_label_skew(partition({}, labels, 10, 8, 42), labels, 10), 0.05);
}

TEST(Partition, DirichletIsADisjointCoverOfNonEmptyShards) {
  const auto labels = balanced_labels();
  for (double alpha : {0.01, 0.1, 0.5, 1000.0})
    for (int peers : {2, 8, 16}) {
      SCOPED_TRACE(testing::Message() << "alpha " << alpha << ", " << peers << " peers");
      const Shards shards = partition({PartitionSpec::Kind::kDirichlet, alpha}, labels, 10, peers, 3);
      ASSERT_EQ(shards.size(), static_cast<std::size_t>(peers));
      expect_disjoint_cover(shards, labels.size());
    }
}

// With as many peers as examples and a tiny alpha, Dirichlet leaves most
// peers empty; the fix-up must still give each exactly one.
TEST(Partition, DirichletFixesUpEmptyShards) {
  const auto labels = balanced_labels(2, 10);
  const Shards shards = partition({PartitionSpec::Kind::kDirichlet, 0.01}, labels, 10, 20, 5);
  expect_disjoint_cover(shards, labels.size());
  for (const auto& shard : shards) EXPECT_EQ(shard.size(), 1u);
}

TEST(Partition, SmallAlphaSkewsLabelsLargeAlphaDoesNot) {
  const auto labels = balanced_labels();
  const double skewed =
      mean_label_skew(partition({PartitionSpec::Kind::kDirichlet, 0.1}, labels, 10, 8, 1), labels, 10);
  const double uniform =
      mean_label_skew(partition({PartitionSpec::Kind::kDirichlet, 1000}, labels, 10, 8, 1), labels, 10);
  EXPECT_GT(skewed, 0.5);
  EXPECT_LT(uniform, 0.05);
}

TEST(Partition, DeterministicBySeed) {
  const auto labels = balanced_labels();
  for (const PartitionSpec& spec : {PartitionSpec{}, PartitionSpec{PartitionSpec::Kind::kDirichlet, 0.3}}) {
    SCOPED_TRACE(describe(spec));
    EXPECT_EQ(partition(spec, labels, 10, 8, 11), partition(spec, labels, 10, 8, 11));
    EXPECT_NE(partition(spec, labels, 10, 8, 11), partition(spec, labels, 10, 8, 12));
  }
}

TEST(Partition, RejectsImpossibleRequests) {
  const std::vector<std::uint8_t> labels{0, 1, 2};
  EXPECT_THROW(partition({}, labels, 10, 0, 1), std::invalid_argument);
  EXPECT_THROW(partition({}, labels, 10, 4, 1), std::invalid_argument);
  EXPECT_THROW(partition({PartitionSpec::Kind::kDirichlet, 0}, labels, 10, 2, 1), std::invalid_argument);
}

}  // namespace
}  // namespace murmur::peer::data
