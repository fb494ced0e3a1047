// The parameter servers' sharding (ps_sharding.h): deterministic and
// balanced by size, worked by hand.
#include "gossip/algorithm/ps_sharding.h"

#include <gtest/gtest.h>

#include <vector>

namespace murmur::gossip::detail {
namespace {

TEST(PsSharding, LargestFirstOntoTheLeastLoaded) {
  // Sizes 10, 7, 6, 5, 2 (ids 1, 3, 0, 4, 2) onto servers 4 and 9, loads
  // after each: 10 -> 4 (10, 0); 7 -> 9 (10, 7); 6 -> 9 (10, 13);
  // 5 -> 4 (15, 13); 2 -> 9 (15, 15).
  const std::vector<std::size_t> sizes{6, 10, 2, 7, 5};
  const std::vector<int> servers{4, 9};
  EXPECT_EQ(assign_servers(sizes, servers), (std::vector<int>{9, 4, 9, 9, 4}));
  // Ties go to the earlier tensor and the earlier server.
  EXPECT_EQ(assign_servers(std::vector<std::size_t>{3, 3, 3}, servers), (std::vector<int>{4, 9, 4}));
  // One server takes everything; more servers than tensors leave some idle.
  EXPECT_EQ(assign_servers(sizes, std::vector<int>{2}), (std::vector<int>{2, 2, 2, 2, 2}));
  EXPECT_EQ(assign_servers(std::vector<std::size_t>{1}, std::vector<int>{0, 1, 2}), (std::vector<int>{0}));
}

TEST(PsSharding, LargeTensorsAreCutIntoShards) {
  // Tensors of 10, 3, 0 and 8 floats, shards of at most 4: 4 4 2 | 3 | | 4 4.
  const ShardCut cut = cut_shards(std::vector<std::size_t>{10, 3, 0, 8}, 4);
  EXPECT_EQ(cut.floats, (std::vector<std::size_t>{4, 4, 2, 3, 4, 4}));
  EXPECT_EQ(cut.first_shard, (std::vector<std::size_t>{0, 3, 4, 4, 6}));
  // Shards at least as large as every tensor: one shard per non-empty tensor.
  EXPECT_EQ(cut_shards(std::vector<std::size_t>{10, 3}, 10).floats, (std::vector<std::size_t>{10, 3}));
  // One large layer no longer lands on one server: its shards spread.
  const ShardCut big = cut_shards(std::vector<std::size_t>{12, 1}, 3);
  EXPECT_EQ(assign_servers(big.floats, std::vector<int>{0, 1, 2, 3}), (std::vector<int>{0, 1, 2, 3, 0}));
}

TEST(PsSharding, TheFirstKMembersServe) {
  const std::vector<int> members{0, 2, 3, 5};
  EXPECT_EQ(server_ranks(members, 0), members);  // default: as many servers as workers
  EXPECT_EQ(server_ranks(members, 2), (std::vector<int>{0, 2}));
  EXPECT_EQ(server_ranks(members, 9), members);  // fewer members than asked: all of them
}

}  // namespace
}  // namespace murmur::gossip::detail
