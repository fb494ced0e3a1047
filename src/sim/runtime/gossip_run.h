// run_gossip: one murmur-sim experiment with murmur's own gossip code. Every
// GPU of the ClusterSpec is a simulated peer (a simulated thread of a
// VirtualRuntime) that runs the real algorithm (gossip/algorithm), over the
// real topology (gossip/topology) and, optionally, the real scheduler
// (gossip/schedule), talking through a SimCommunicator whose messages the
// NetworkModel times.
//
//   GossipSetup s;
//   s.profile = builtin_profile("resnet50");
//   s.cluster = ...;  apply_network_preset(s.cluster, "10gbe-tcp");
//   s.options.algorithm = "choco"; s.options.compressor = "topk:0.01";
//   GossipResult r = run_gossip(s);   // r.samples_per_s, r.speedup, ...
//
// A peer's iteration: sleep its compute time (profile.iteration_s() times
// cluster.slowdown(rank), virtual), add a small pseudo-gradient to its
// parameters (so compressors see changing data; off with perturb = false)
// or call local_step (real training, below), Algorithm::step(params), then
// the ScheduleController's on_step when the schedule is adaptive, a flush
// every flush_every iterations, then after_step. After the last
// iteration, finish(params).
//
// Proxy parameters and byte_scale: a peer's parameters are a proxy vector of
// `proxy` floats (seeded per rank), not the model's, so that 1024 peers fit
// in memory and time. Every message's simulated size is its real size times
// byte_scale = profile.gradient_bytes() / (proxy * 4): a dense message of
// the proxy costs what the whole gradient would, and a compressed one
// scales with it (top-k of the proxy keeps the same fraction of values).
// Per-message headers (8 bytes for a compressor, 8 for SGP's weight) are
// scaled too, which is negligible unless proxy is tiny. The scheduler sees
// the same scaled world: proxy-sized tensors over links byte_scale times
// slower, so its decisions match those for the real model on real links
// (its small-message threshold, below which a message measures latency
// only, is divided by byte_scale to match).
//
// Algorithms: those the registry marks simulable (gossip/algorithm/
// registry.h): dpsgd, choco, sgp, allreduce, topk-allreduce, local-sgd.
// adpsgd is refused (it waits with timed polls and wakes from network
// callbacks outside the Communicator's hooks; the simulator cannot see
// those). choco needs a static topology; the centralized ones ignore it.
//
// Blocking: run_gossip blocks the calling thread for the whole simulation
// (host time: result.host_seconds). It creates 2 OS threads per peer.
// Errors: std::invalid_argument for a setup that does not fit (unknown
// algorithm, adpsgd, bad sizes); the algorithm's own errors (a topology that
// does not fit, a bad compressor spec) as they are; a PeerError or
// SimDeadlock if the simulated run fails.
// Thread safety: independent calls may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "murmur/gossip_options.h"
#include "sim/cluster_spec.h"
#include "sim/model_profile.h"

namespace murmur::sim::runtime {

struct GossipSetup {
  ModelProfile profile;
  ClusterSpec cluster;
  // The job's gossip settings, as murmur-peer takes them: algorithm,
  // topology (a generator over cluster.gpus nodes, or a .topo file; with its
  // degree, probability and topology seed), compressor, gamma, period,
  // overlap, schedule and schedule_interval. A schedule other than "fixed"
  // runs one ScheduleController per peer; their gather is a simulated
  // collective (every rank blocks until all have proposed; it takes no
  // virtual time). options.seed also seeds the proxy's initial values and
  // pseudo-gradients.
  GossipOptions options;
  int warmup_iterations = 2;  // run, not measured
  int iterations = 10;        // measured
  std::size_t proxy = 4096;   // proxy parameters per peer (floats)
  bool perturb = true;        // add the pseudo-gradient each iteration
  double timeout_s = 3600;    // virtual seconds before a stalled peer fails
  // Real training in place of the proxy (sim/sim_training.h): `initial`,
  // when not empty, is every rank's starting parameters (proxy values, so
  // byte_scale is 1 when the profile has the same size), and `local_step`
  // replaces the pseudo-gradient: called after the compute sleep and before
  // the algorithm's step with the rank's parameters, to train them in place.
  // `after_step` sees them once the step (and the controller) returned, at
  // virtual time `time_s`. Both run with the baton held (one peer at a
  // time): they may take host time, none virtual, and must not block.
  std::vector<float> initial;
  // > 0: Algorithm::flush after every flush_every-th iteration (the round
  // in flight completes into the parameters, as the trainer does at each
  // epoch's end).
  int flush_every = 0;
  std::function<void(int rank, int iteration, std::span<float> params)> local_step;
  std::function<void(int rank, int iteration, double time_s, std::span<const float> params)> after_step;
  // Adaptive schedule: called with every decision record (the JSON of
  // gossip/schedule/decision_record.h) as rank `rank` makes it at virtual
  // time `time_s`. Runs with the simulation's baton held: must not block.
  std::function<void(int rank, double time_s, const nlohmann::json& decision)> on_decision;
};

struct LinkBytes {
  int src = 0;
  int dst = 0;
  double bytes = 0;  // simulated
};

struct GossipResult {
  // Virtual seconds per measured iteration: each peer's mean, then the
  // median and the maximum over peers.
  double iteration_s = 0;
  double iteration_max_s = 0;
  double samples_per_s = 0;  // gpus * batch / iteration_s
  double speedup = 0;        // samples_per_s / profile.single_gpu_samples_per_s
  // Per iteration, mean over peers: compute (slept), communication wait
  // (AlgorithmStats::wait_seconds: the caller blocked on a round), and
  // overlap (communication-thread time hidden behind compute:
  // comm_seconds - wait_seconds, at least 0).
  double compute_s = 0;
  double wait_s = 0;
  double overlap_s = 0;
  // Simulated bytes over the whole run (warm-up included).
  std::vector<LinkBytes> links;  // sorted by (src, dst)
  double bytes_total = 0;
  double bytes_inter_node = 0;
  double bytes_intra_node = 0;
  double bytes_per_iteration = 0;  // bytes_total / (warm-up + measured iterations)
  double byte_scale = 0;
  std::uint64_t messages = 0;
  // Proxy vectors: RMS over peers and elements of x_r - mean(x), at the
  // start and after finish(); and max |mean(x) - mean(x at start)| (0 up to
  // rounding when perturb is off and the algorithm keeps the mean).
  double initial_consensus_distance = 0;
  double consensus_distance = 0;
  double mean_drift = 0;
  // Adaptive schedule: rank 0's last decision (period, ratio), how many
  // agreed decisions each rank made, and rank 0's reactions between them
  // (AdaptivePolicy::react).
  std::optional<int> final_period;
  std::optional<double> final_ratio;
  int schedule_decisions = 0;
  int schedule_reactions = 0;
  double virtual_seconds = 0;  // the clock at the end
  double host_seconds = 0;     // wall-clock time the simulation took
  std::uint64_t thread_switches = 0;
};

GossipResult run_gossip(const GossipSetup& setup);

}  // namespace murmur::sim::runtime
