// What murmur-sim computes for its command line: rows of predictions for a
// model on a cluster, for each method and GPU count asked for. Paper methods
// go through the calibrated cost models, murmur's algorithms through a real
// run on the virtual clock. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "murmur/gossip_options.h"
#include "sim/cli/sim_report.h"
#include "sim/cluster_spec.h"

namespace murmur::sim::cli {

// How murmur's own algorithms run for a row: the job's gossip settings
// (GossipOptions; the algorithm comes from the method list, the topology seed
// from `gossip.seed`) and the simulation's.
struct GossipRunOptions {
  GossipOptions gossip;
  int iterations = 30;
  // Run before measuring; -1: 2 for a fixed schedule, and for an adaptive
  // one as many as `iterations`, so that what is measured is the setting
  // the scheduler settled on rather than its search.
  int warmup = -1;
  int proxy_floats = 4096;
};

struct SimRequest {
  std::string model = "resnet50";
  std::string network = "10gbe-tcp";
  std::optional<ClusterSpec> cluster;  // from --cluster: its GPU count, nodes, links, stragglers
  int gpus_per_node = 4;
  std::vector<int> gpus;             // ignored with a cluster file
  std::vector<std::string> methods;  // paper names or murmur algorithm names
  std::vector<Straggler> stragglers;
  GossipRunOptions gossip;
};

// "4,8,16" -> {4, 8, 16}; throws std::invalid_argument naming the item.
std::vector<int> parse_gpu_list(const std::string& list);
// "paper" expands to the seven; each name checked; throws std::invalid_argument.
std::vector<std::string> parse_method_list(const std::string& list);
// "3:1.5" -> rank 3, slowdown 1.5; throws std::invalid_argument.
Straggler parse_straggler(const std::string& item);

std::vector<SimRow> simulate(const SimRequest& request);
// Every built-in model x preset network x paper method x {1, 4, 8, 16, 32}
// GPUs, 4 per node: the seed paper's grid.
std::vector<SimRow> paper_table_rows();

}  // namespace murmur::sim::cli
