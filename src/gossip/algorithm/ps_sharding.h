// Which server holds which tensor, for the parameter-server methods
// (parameter_server.h): a size-balanced sharding, the same on every rank
// because it depends only on the sizes and the server list (no timing, no
// messages). Tensors are taken largest first (ties: lower id first) and
// each goes to the server with the fewest floats so far (ties: the earlier
// server in `servers`): the greedy rule BytePS uses, within 4/3 of the best
// balance. The "tensors" sharded are a method's tensors cut by cut_shards.
// Internal to algorithm/. Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace murmur::gossip::detail {

// Tensors cut into shards of at most `max_floats` floats each (BytePS's
// partitions: a large tensor spread over several servers rather than
// loading one), in tensor order, each tensor's shards in offset order.
// An empty tensor has no shard. `max_floats` must be >= 1.
struct ShardCut {
  std::vector<std::size_t> floats;       // by shard id
  std::vector<std::size_t> first_shard;  // by tensor id, one more entry: tensor t is shards [first[t], first[t+1])
};
ShardCut cut_shards(std::span<const std::size_t> tensor_floats, std::size_t max_floats);

// The server rank of every tensor (by tensor id = index into `sizes`).
// `servers` must not be empty.
std::vector<int> assign_servers(std::span<const std::size_t> sizes, std::span<const int> servers);

// The first `count` members serve (0, or more than there are: all of them).
std::vector<int> server_ranks(std::span<const int> members, int count);

}  // namespace murmur::gossip::detail
