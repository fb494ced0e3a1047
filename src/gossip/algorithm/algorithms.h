// Constructors of the concrete algorithms, for factory.cc. Internal to
// algorithm/; users call make_algorithm (algorithm.h).
#pragma once

#include <memory>

#include "gossip/algorithm/algorithm.h"

namespace murmur::gossip::detail {

std::unique_ptr<Algorithm> make_dpsgd(const AlgorithmOptions& o, Communicator& comm, const Topology& topology);
std::unique_ptr<Algorithm> make_choco(const AlgorithmOptions& o, Communicator& comm, const Topology& topology);
std::unique_ptr<Algorithm> make_sgp(const AlgorithmOptions& o, Communicator& comm, const Topology& topology);
std::unique_ptr<Algorithm> make_adpsgd(const AlgorithmOptions& o, Communicator& comm, const Topology& topology);
// kind: "allreduce", "local-sgd" (exact mean or sum) or "topk-allreduce".
std::unique_ptr<Algorithm> make_allreduce(const std::string& kind, const AlgorithmOptions& o, Communicator& comm);

}  // namespace murmur::gossip::detail
