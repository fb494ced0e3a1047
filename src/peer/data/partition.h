// How a training set is split among peers: "iid" (a uniform random split) or
// "dirichlet:<alpha>" (label-skewed non-IID shards, Hsu et al. 2019: each
// class is split among peers in proportions drawn from Dir(alpha); alpha 0.1
// gives each peer a few dominant classes, alpha 1000 is close to iid).
//
// Every peer computes the whole partition from the same (spec, labels,
// peers, seed) and keeps its own shard, so no shard is ever sent.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace murmur::peer::data {

struct PartitionSpec {
  enum class Kind { kIid, kDirichlet } kind = Kind::kIid;
  double alpha = 0;  // kDirichlet: concentration, > 0
};

// "iid" | "dirichlet:<alpha>" with a finite alpha > 0; anything else throws
// std::invalid_argument naming the spec and the accepted forms.
PartitionSpec parse_partition(const std::string& spec);

// The shortest form parse_partition reads back: "iid", "dirichlet:0.3".
std::string describe(const PartitionSpec& spec);

// The indices (into `labels`) of each peer's shard, each sorted ascending.
// Deterministic for (spec, labels, peers, seed); every example appears in
// exactly one shard; every shard is non-empty (a shard Dirichlet leaves empty
// takes one example from the largest shard); iid shard sizes differ by at
// most 1.
// Throws std::invalid_argument when peers < 1, when there are fewer examples
// than peers, or for a Dirichlet alpha that is not > 0. A label >=
// num_classes is a bug (MURMUR_CHECK): loaders validate labels.
std::vector<std::vector<std::uint32_t>> partition(const PartitionSpec& spec, std::span<const std::uint8_t> labels,
                                                  int num_classes, int peers, std::uint64_t seed);

}  // namespace murmur::peer::data
