// The one-peer exponential graph (Assran et al., SGP; Ying et al. 2021), a
// time-varying directed topology: in round t node i sends to
// i + 2^(t mod tau) (mod n), tau = ceil(log2 n), one out- and one
// in-neighbour per round. With push-sum weights (1/2 kept, 1/2 sent) the
// product of the tau matrices of one period is exact averaging when n is a
// power of two.
#pragma once

#include <cstdint>
#include <string>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

class OnePeerExponential final : public Topology {
 public:
  // n >= 2, else TopologyError.
  explicit OnePeerExponential(int n);

  std::string name() const override { return "one-peer-exponential"; }
  int size() const override { return n_; }
  bool time_varying() const override { return n_ > 2; }
  std::uint64_t period() const override { return tau_; }
  Graph at_round(std::uint64_t round) const override;

 private:
  int n_;
  std::uint64_t tau_;
};

}  // namespace murmur::gossip
