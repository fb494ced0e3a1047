// The Communicator's message tags (gossip/algorithm/communicator.h): phases,
// rounds and channels never collide. Pure: no transport, no backend linked
// (the algorithms over loopback transports are algorithm_test).
#include "gossip/algorithm/communicator.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace murmur::gossip {
namespace {

TEST(Tag, PhasesRoundsAndChannelsNeverCollide) {
  EXPECT_NE(make_tag(1, Phase::kDpsgd, 5), make_tag(1, Phase::kChoco, 5));
  EXPECT_NE(make_tag(1, Phase::kDpsgd, 5), make_tag(2, Phase::kDpsgd, 5));
  EXPECT_NE(make_tag(1, Phase::kDpsgd, 5), make_tag(1, Phase::kDpsgd, 6));
  EXPECT_EQ(make_tag(1, Phase::kDpsgd, 0) >> 56, 1u);
  // Round wraps at 2^48 without touching the phase.
  EXPECT_EQ(make_tag(1, Phase::kDpsgd, std::uint64_t{1} << 48), make_tag(1, Phase::kDpsgd, 0));
}

}  // namespace
}  // namespace murmur::gossip
