#include <stdexcept>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/registry.h"

namespace murmur::gossip {

void throw_topology_size(const std::string& algorithm, const Topology& topology, int ranks) {
  throw std::invalid_argument(algorithm + ": topology '" + topology.name() + "' has " +
                              std::to_string(topology.size()) + " nodes but the job has " + std::to_string(ranks) +
                              " ranks");
}

std::unique_ptr<Algorithm> make_algorithm(const std::string& name, const AlgorithmOptions& options, Communicator& comm,
                                          const Topology* topology) {
  const AlgorithmInfo& info = algorithm_info(name);
  if (info.needs_topology) {
    if (topology == nullptr) throw std::invalid_argument(name + ": needs a topology (--topology)");
    // The transport only grows (joiners), and may have grown between the
    // topology's making and now: exact only for a fixed membership.
    const bool fits = options.tolerate_lost_peers ? topology->size() <= comm.size() : topology->size() == comm.size();
    if (!fits) throw_topology_size(name, *topology, comm.size());
  }
  return info.make(options, comm, topology);
}

}  // namespace murmur::gossip

namespace murmur::gossip {

// Algorithms without state (adpsgd): nothing to save, and only nothing to
// load. Its exchanges are pairwise on the parameters alone and their order
// depends on timing, so there is no trajectory to continue exactly.
std::string Algorithm::save_state() const { return {}; }

void Algorithm::load_state(std::string_view state) {
  if (!state.empty())
    throw std::invalid_argument(name() + " keeps no state beyond the parameters, but the checkpoint holds " +
                                std::to_string(state.size()) + " bytes of it (saved by another algorithm?)");
}

void Algorithm::load_state_from_other_view(std::string_view state) { load_state(state); }

}  // namespace murmur::gossip
