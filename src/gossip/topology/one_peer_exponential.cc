#include "gossip/topology/one_peer_exponential.h"

#include "gossip/topology/errors.h"

namespace murmur::gossip {

OnePeerExponential::OnePeerExponential(int n) : n_(n), tau_(0) {
  if (n < 2) {
    throw TopologyError("one-peer-exponential needs at least 2 nodes, got " + std::to_string(n));
  }
  while ((std::uint64_t{1} << tau_) < static_cast<std::uint64_t>(n)) ++tau_;
}

Graph OnePeerExponential::at_round(std::uint64_t round) const {
  const std::uint64_t hop = std::uint64_t{1} << (round % tau_);
  Graph g(n_, true);
  for (int i = 0; i < n_; ++i) {
    g.add_edge(i, static_cast<int>((static_cast<std::uint64_t>(i) + hop) % n_));
  }
  return g;
}

}  // namespace murmur::gossip
