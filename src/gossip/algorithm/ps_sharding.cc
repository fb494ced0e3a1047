#include "gossip/algorithm/ps_sharding.h"

#include <algorithm>
#include <numeric>

#include "common/check.h"

namespace murmur::gossip::detail {

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
