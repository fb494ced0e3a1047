// Faults of the world in topologies: a malformed graph file, a generator
// asked for a graph that cannot exist (a 3-regular graph on 5 nodes, a
// hypercube on 12), a random graph that stays disconnected. (Bugs are
// MURMUR_CHECK failures, see common/check.h.)
//
// The message says what is wrong and what to do; for files it starts with
// "path:line: ".
#pragma once

#include <stdexcept>

namespace murmur::gossip {

class TopologyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace murmur::gossip
