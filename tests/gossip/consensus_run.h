// The consensus experiment shared by the multi-process peer program
// (gossip_test_peer) and the in-process tests (algorithm_test): seeded random
// vectors per rank, no gradient, N steps of an algorithm, then the error
// against what every rank can compute itself from the seeds.
#pragma once

#include <cstdint>
#include <string>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/communicator.h"

namespace murmur::testing {

struct ConsensusSpec {
  std::string algorithm = "dpsgd";
  std::string topology = "ring";  // a generator name
  std::uint64_t topology_seed = 1;
  int degree = 4;  // "random" (random regular)
  int steps = 100;
  std::size_t elements = 10000;
  std::uint64_t seed = 7;  // the data
  // consensus: x_r ~ U(-1, 1)^n; steps of the algorithm; finish.
  // sum:       the same vectors, one exact step (allreduce, average=false).
  // ef:        topk-allreduce on the same input every step (gradient style).
  // drift:     local-sgd; before each step x_r += 0.01 (r + 1).
  std::string mode = "consensus";
  gossip::AlgorithmOptions options;
};

struct ConsensusResult {
  double max_error = 0;  // max_i |x_i - target_i| (consensus, sum, drift)
  double rel_error = 0;  // ||x - mean|| / max_r ||x_r(0) - mean||
  double weight = 1;     // sgp push-sum weight
  double residual = 0;   // ef: ||error-feedback residual||
  double ef_gap = 0;     // ef: ||p * sum_t out_t - steps * sum_r v_r||
  double checksum = 0;   // sum of x, to compare ranks bitwise
  gossip::AlgorithmStats stats;
};

// The initial vector of `rank` (deterministic in seed and rank).
std::vector<float> initial_vector(std::uint64_t seed, int rank, std::size_t n);

ConsensusResult run_consensus(const ConsensusSpec& spec, gossip::Communicator& comm);

// One line "result rank=R key=value ..." (parsed by the tests).
std::string format_result(int rank, const ConsensusResult& r);

}  // namespace murmur::testing
