#include "gossip/algorithm/gossip_setup.h"

#include <stdexcept>
#include <string>

#include "gossip/algorithm/registry.h"
#include "gossip/topology/factory.h"

namespace murmur::gossip {

schedule::ScheduleConfig check_gossip_options(const GossipOptions& g) {
  const AlgorithmInfo& info = algorithm_info(g.algorithm);
  if (g.period < 1) throw std::invalid_argument("period " + std::to_string(g.period) + " must be >= 1");
  const auto schedule = schedule::parse_schedule_flag(g.schedule);
  if (schedule.mode == schedule::ScheduleMode::kAdaptive && !info.has_rounds) {
    throw std::invalid_argument("schedule '" + g.schedule + "': " + g.algorithm +
                                " has no rounds to schedule (use --schedule fixed)");
  }
  if (schedule.mode == schedule::ScheduleMode::kAdaptive && info.averages == Averages::kGradients) {
    throw std::invalid_argument("schedule '" + g.schedule + "': " + g.algorithm +
                                " averages every step's gradients exactly: no period or compression to tune (use "
                                "--schedule fixed)");
  }
  if (info.averages == Averages::kGradients && g.period != 1) {
    throw std::invalid_argument("--period " + std::to_string(g.period) + ": " + g.algorithm +
                                " averages the gradients of every step (local-sgd averages models every H steps)");
  }
  if (g.schedule_interval < 1) {
    throw std::invalid_argument("schedule interval " + std::to_string(g.schedule_interval) + " must be >= 1");
  }
  return schedule;
}

AlgorithmOptions algorithm_options(const GossipOptions& g, const schedule::ScheduleConfig& schedule) {
  AlgorithmOptions o;
  static_cast<GossipOptions&>(o) = g;
  if (schedule.mode == schedule::ScheduleMode::kAdaptive) {
    o.max_ratio = schedule.bounds.max_ratio;
    o.receipts = schedule.receipts;
  }
  return o;
}

std::unique_ptr<Topology> make_gossip_topology(const GossipOptions& g, int nodes) {
  if (!algorithm_info(g.algorithm).needs_topology) return nullptr;
  if (!is_generator(g.topology)) return load_topology(g.topology);
  TopologySpec spec;
  spec.kind = g.topology;
  spec.nodes = nodes;
  spec.degree = g.topology_degree;
  spec.probability = g.topology_probability;
  spec.seed = g.topology_seed;
  return make_topology(spec);
}

}  // namespace murmur::gossip
