// NetworkModel's link episodes: a slow path between two ranks for a while,
// which holds up that pair's messages only.
#include <gtest/gtest.h>

#include "sim/network_model.h"

namespace murmur::sim {
namespace {

ClusterSpec four_nodes_with_a_slow_pair() {
  ClusterSpec c;
  c.gpus = 4;
  c.gpus_per_node = 1;
  c.network = "custom";
  c.inter_node = {1e-5, 1e9};
  c.episodes.push_back({0, 1, 1.0, 2.0, {1e-3, 1e6}});
  return c;
}

double one_message(NetworkModel& model, int src, int dst, double bytes, double post) {
  return model.arrive(src, dst, bytes, model.depart(src, dst, bytes, post));
}

TEST(NetworkModelEpisodes, OnlyThePairAndOnlyWhileItLasts) {
  NetworkModel model(four_nodes_with_a_slow_pair());
  // Before: 1 MB at 1 GB/s plus 10 us.
  EXPECT_DOUBLE_EQ(one_message(model, 0, 1, 1e6, 0.0), 1e-3 + 1e-5);
  // During, both ways: the NIC's 1 ms, then 1 s through the slow path and
  // its 1 ms latency.
  EXPECT_DOUBLE_EQ(one_message(model, 1, 0, 1e6, 1.0), 1.0 + 1e-3 + 1.0 + 1e-3);
  // Another pair meanwhile is unaffected.
  EXPECT_DOUBLE_EQ(one_message(model, 2, 3, 1e6, 1.5), 1.5 + 1e-3 + 1e-5);
  // After: as before.
  EXPECT_DOUBLE_EQ(one_message(model, 0, 1, 1e6, 3.0), 3.0 + 1e-3 + 1e-5);
}

TEST(NetworkModelEpisodes, MessagesOnTheSlowPathQueue) {
  NetworkModel model(four_nodes_with_a_slow_pair());
  const double first = one_message(model, 0, 1, 1e5, 1.0);   // 0.1 ms on the NIC, then 0.1 s
  const double second = one_message(model, 0, 1, 1e5, 1.0);  // waits for the first on the slow path
  EXPECT_DOUBLE_EQ(first, 1.0 + 1e-4 + 0.1 + 1e-3);
  EXPECT_DOUBLE_EQ(second, first + 0.1);
}

TEST(NetworkModelEpisodes, EpisodesMustJoinTwoRanks) {
  ClusterSpec c = four_nodes_with_a_slow_pair();
  c.episodes[0].b = 7;
  EXPECT_THROW(NetworkModel{c}, ClusterError);
  c.episodes[0].b = 1;
  c.episodes[0].link.bandwidth_Bps = 0;
  EXPECT_THROW(NetworkModel{c}, ClusterError);
}

}  // namespace
}  // namespace murmur::sim
