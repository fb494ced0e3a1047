// Which server holds which tensor, for the parameter-server methods
// (parameter_server.h): a size-balanced sharding, the same on every rank
// because it depends only on the sizes and the server list (no timing, no
// messages). Tensors are taken largest first (ties: lower id first) and
// each goes to the server with the fewest floats so far (ties: the earlier
// server in `servers`): the greedy rule BytePS uses, within 4/3 of the best
// balance.
// Internal to algorithm/. Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace murmur::gossip::detail {

// The server rank of every tensor (by tensor id = index into `sizes`).
// `servers` must not be empty.
std::vector<int> assign_servers(std::span<const std::size_t> sizes, std::span<const int> servers);

// The first `count` members serve (0, or more than there are: all of them).
std::vector<int> server_ranks(std::span<const int> members, int count);

}  // namespace murmur::gossip::detail
