#include <stdexcept>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/registry.h"

namespace murmur::gossip {

std::unique_ptr<Algorithm> make_algorithm(const std::string& name, const AlgorithmOptions& options, Communicator& comm,
                                          const Topology* topology) {
  const AlgorithmInfo& info = algorithm_info(name);
  if (info.needs_topology) {
    if (topology == nullptr) throw std::invalid_argument(name + ": needs a topology (--topology)");
    if (topology->size() != comm.size())
      throw std::invalid_argument(name + ": topology '" + topology->name() + "' has " +
                                  std::to_string(topology->size()) + " nodes but the job has " +
                                  std::to_string(comm.size()) + " ranks");
  }
  return info.make(options, comm, topology);
}

}  // namespace murmur::gossip
