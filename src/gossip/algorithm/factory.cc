#include <stdexcept>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/algorithms.h"

namespace murmur::gossip {

const std::vector<std::string>& algorithm_names() {
  static const std::vector<std::string> names = {"dpsgd",     "choco",          "sgp",      "adpsgd",
                                                 "allreduce", "topk-allreduce", "local-sgd"};
  return names;
}

std::unique_ptr<Algorithm> make_algorithm(const std::string& name, const AlgorithmOptions& options, Communicator& comm,
                                          const Topology* topology) {
  if (name == "allreduce" || name == "local-sgd" || name == "topk-allreduce")
    return detail::make_allreduce(name, options, comm);
  bool known = false;
  for (const auto& n : algorithm_names()) known = known || n == name;
  if (!known) {
    std::string list;
    for (const auto& n : algorithm_names()) list += (list.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown gossip algorithm '" + name + "'; expected one of: " + list);
  }
  if (topology == nullptr) throw std::invalid_argument(name + ": needs a topology (--topology)");
  if (topology->size() != comm.size())
    throw std::invalid_argument(name + ": topology '" + topology->name() + "' has " + std::to_string(topology->size()) +
                                " nodes but the job has " + std::to_string(comm.size()) + " ranks");
  if (name == "dpsgd") return detail::make_dpsgd(options, comm, *topology);
  if (name == "choco") return detail::make_choco(options, comm, *topology);
  if (name == "sgp") return detail::make_sgp(options, comm, *topology);
  return detail::make_adpsgd(options, comm, *topology);
}

}  // namespace murmur::gossip
