// From a job's GossipOptions (murmur/gossip_options.h) to what runs: the
// checked and parsed schedule, the topology and the algorithm's options. The
// one place that maps a schedule onto an algorithm's options; murmur::Peer
// and the simulator both go through it.
//
//   const auto schedule = check_gossip_options(g);       // before joining
//   auto topology = make_gossip_topology(g, comm.size());  // null if not needed
//   AlgorithmOptions o = algorithm_options(g, schedule);
//   o.channel = 1; o.timeout_s = 60;                       // the instance's own
//   auto algo = make_algorithm(g.algorithm, o, comm, topology.get());
//
// Thread-safe (no state); check_gossip_options reads a schedule file.
#pragma once

#include <memory>

#include "gossip/algorithm/algorithm.h"
#include "gossip/schedule/schedule_file.h"
#include "gossip/topology/topology.h"
#include "murmur/gossip_options.h"

namespace murmur::gossip {

// What can be checked without the network, on every rank alike: a known
// algorithm, period >= 1, schedule_interval >= 1, a schedule that parses and,
// when adaptive, an algorithm with rounds to schedule. Returns the parsed
// schedule. Throws std::invalid_argument naming the field (a bad schedule:
// schedule::ScheduleError, with path:line for a file).
schedule::ScheduleConfig check_gossip_options(const GossipOptions& g);

// The knobs of `g`, and what an adaptive schedule sets besides: the largest
// ratio the scheduler may choose (receive buffers are sized for it) and
// transfer receipts. channel, timeout_s, average and pick keep their
// defaults: they belong to the instance, not the job.
AlgorithmOptions algorithm_options(const GossipOptions& g, const schedule::ScheduleConfig& schedule);

// The graph of g.topology (a generator, with g's degree, probability and
// topology seed, or a .topo file) over `nodes` peers; null when the algorithm
// needs none (registry.h). Throws TopologyError / std::invalid_argument.
std::unique_ptr<Topology> make_gossip_topology(const GossipOptions& g, int nodes);

}  // namespace murmur::gossip
