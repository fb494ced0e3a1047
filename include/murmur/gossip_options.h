// murmur::GossipOptions: the settings of a gossip job, declared once with
// their defaults. murmur::PeerConfig (peer.h) derives from it, the
// algorithms' options (gossip/algorithm/algorithm.h) derive from it, and the
// simulator embeds it, so that murmur-peer, murmur-sim, the embedding API and
// the algorithms cannot disagree about a field or its default. The command
// line flags for these fields are declared once too
// (src/gossip/algorithm/gossip_flags.h); docs/architecture.md, "Adding a
// knob", lists the files a new one touches.
//
// Standard library only, and C++17 (programs that embed murmur may not use
// C++20): this header is part of the public embedding API. A plain value
// type; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace murmur {

struct GossipOptions {
  // The algorithm by name: murmur-peer --help (or gossip::algorithms(),
  // gossip/algorithm/registry.h) lists them with what each needs.
  std::string algorithm = "choco";
  // A generator name (murmur-topo --help) or a .topo file path; the
  // centralized algorithms ignore it.
  std::string topology = "exponential";
  int topology_degree = 4;               // random regular graphs
  double topology_probability = 0.25;    // erdos-renyi
  std::uint64_t topology_seed = 1;       // random graphs
  std::string compressor = "topk:0.01";  // for the algorithms that take one (docs/compressors.md)
  int period = 1;                        // H: communicate every H-th step, >= 1
  // The first warmup_steps steps all communicate, whatever the period (and
  // whatever a scheduler chose): models that move fast early, at a high
  // learning rate, are kept together until they settle, and only then
  // allowed to drift for H steps (post-local SGD, Lin et al. 2020). Steps
  // are counted as Algorithm::step counts them, from 1; 0: off. Algorithms
  // without rounds (adpsgd) ignore it.
  int warmup_steps = 0;
  double gamma = 0.1;           // choco consensus step size, (0, 1]
  std::optional<bool> overlap;  // unset: the algorithm's default (algorithm.h)
  std::uint64_t seed = 1;       // the algorithm's own randomness (adpsgd partners)
  // "fixed" keeps period and compressor as given; "adaptive[:key=value,...]"
  // or "@file" lets the latency-aware scheduler retune them, deciding every
  // schedule_interval steps (docs/scheduler.md).
  std::string schedule = "fixed";
  int schedule_interval = 5;
  // bytescheduler-a2a: gradients are cut into partitions of at most this
  // many floats, and at most `bytescheduler_credit` floats of partitions
  // are on the wire at once. ByteScheduler's defaults (its ByteCore:
  // BYTESCHEDULER_PARTITION 1000000 and BYTESCHEDULER_CREDIT 4000000
  // parameters).
  std::int64_t bytescheduler_partition = 1000000;
  std::int64_t bytescheduler_credit = 4000000;
  // bsp-ps, wfbp-ps, bytescheduler-ps: the first `ps_servers` members of
  // the view run a server role (co-located, a thread each, as BytePS);
  // 0: every member (the survey's "as many servers as workers").
  int ps_servers = 0;
  // bsp-ps, wfbp-ps, bytescheduler-ps: each tensor they push (a layer, or
  // a bytescheduler partition) is cut into shards of at most this many
  // floats, spread over the servers on their own, so that one large layer
  // does not load one server (and its NIC) with most of the model.
  // BytePS's default partition (BYTEPS_PARTITION_BYTES, 4,096,000 bytes).
  std::int64_t ps_partition = 1024000;
  // topk-sgd: the fraction of the gradient's values each rank sends, in
  // (0, 1] (the survey's TopK-SGD density, 0.001).
  double topk_density = 0.001;
};

// Calls visit(name, value) for each field that every rank of a job must set
// alike (rounds pair up and messages fit only then); murmur::Peer compares
// them across ranks at the first step() and names the ranks that differ. A
// knob that changes when or what a rank sends belongs here. (overlap and
// seed may differ between ranks.) A .topo file is compared by path.
template <typename Visit>
void visit_agreed_fields(const GossipOptions& g, Visit&& visit) {
  visit("algorithm", g.algorithm);
  visit("compressor", g.compressor);
  visit("period", g.period);
  visit("warmup steps", g.warmup_steps);
  visit("gamma", g.gamma);
  visit("topology", g.topology);
  visit("degree", g.topology_degree);
  visit("probability", g.topology_probability);
  visit("topology seed", g.topology_seed);
  visit("schedule", g.schedule);
  visit("schedule interval", g.schedule_interval);
  visit("bytescheduler partition", g.bytescheduler_partition);
  visit("bytescheduler credit", g.bytescheduler_credit);
  visit("servers", g.ps_servers);
  visit("ps partition", g.ps_partition);
  visit("topk density", g.topk_density);
}

}  // namespace murmur
