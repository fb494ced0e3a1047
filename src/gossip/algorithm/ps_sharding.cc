#include "gossip/algorithm/ps_sharding.h"

#include <algorithm>
#include <numeric>

#include "common/check.h"

namespace murmur::gossip::detail {

ShardCut cut_shards(std::span<const std::size_t> tensor_floats, std::size_t max_floats) {
  MURMUR_CHECK_GE(max_floats, std::size_t{1});
  ShardCut cut;
  cut.first_shard.reserve(tensor_floats.size() + 1);
  for (const std::size_t floats : tensor_floats) {
    cut.first_shard.push_back(cut.floats.size());
    for (std::size_t at = 0; at < floats; at += max_floats) cut.floats.push_back(std::min(max_floats, floats - at));
  }
  cut.first_shard.push_back(cut.floats.size());
  return cut;
}

std::vector<int> assign_servers(std::span<const std::size_t> sizes, std::span<const int> servers) {
  MURMUR_CHECK(!servers.empty());
  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::size_t> load(servers.size(), 0);
  std::vector<int> owner(sizes.size(), -1);
  for (std::size_t id : order) {
    const std::size_t least = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[id] = servers[least];
    load[least] += sizes[id];
  }
  return owner;
}

std::vector<int> server_ranks(std::span<const int> members, int count) {
  const std::size_t n = count <= 0 ? members.size() : std::min(members.size(), static_cast<std::size_t>(count));
  return std::vector<int>(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace murmur::gossip::detail
