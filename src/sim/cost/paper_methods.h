// The seed paper's seven synchronous techniques as cost models over the
// iteration pipeline (iteration_pipeline.h):
//
//   BSP-A2A            one fused all-reduce (ring, NCCL) after backward
//   WFBP-A2A           one all-reduce per tensor as its gradient is ready
//   MG-WFBP            all-reduce of merged buckets chosen from the
//                      alpha-beta cost (mg_wfbp.h)
//   ByteScheduler-A2A  4,000,000-byte partitions, priority to early layers,
//                      the next forward starts as its layers arrive
//   BSP-PS             parameter servers (BytePS: one per node, 4,096,000-
//                      byte partitions) after backward
//   WFBP-PS            parameter servers, per tensor as it is ready
//   ByteScheduler-PS   parameter servers with ByteScheduler's partitions,
//                      priority and 16,000,000-byte credit
//
// The costs take a few constants per network and per software stack
// (PaperConstants), derived from 14 physical ones (free_constants.h) that
// calibration.h fits on the ResNet-50 rows, each inside its band.
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/cluster_spec.h"
#include "sim/model_profile.h"

namespace murmur::sim::cost {

enum class PaperMethod {
  kBspA2A,
  kWfbpA2A,
  kMgWfbp,
  kByteSchedulerA2A,
  kBspPs,
  kWfbpPs,
  kByteSchedulerPs,
};

const std::vector<PaperMethod>& paper_methods();
// The paper's name: "BSP-A2A", "MG-WFBP", "ByteScheduler-PS", ...
std::string paper_method_name(PaperMethod method);
// Throws std::invalid_argument listing the names for an unknown one.
PaperMethod paper_method_by_name(const std::string& name);

// What one software stack achieves on one network.
struct StackOnNetwork {
  double ring_bandwidth_Bps = 0;  // NCCL ring across nodes: bytes/s through each NIC
  double ring_step_s = 0;         // NCCL: latency of one ring step between nodes
  double ps_bandwidth_Bps = 0;    // BytePS push + pull: bytes/s through each NIC
  double ps_connection_Bps = 0;   // BytePS: one worker-server connection's cap
  double ps_partition_s = 0;      // BytePS: one partition's push and pull requests (latency, overlaps in flight)
};

struct PaperConstants {
  std::map<std::string, StackOnNetwork> networks;  // by preset name
  double intra_ring_bandwidth_Bps = 0;             // NCCL ring inside a node (PCIe)
  double intra_ring_step_s = 0;
  double horovod_op_s = 0;            // per all-reduce: negotiation + launch
  double ps_local_bandwidth_Bps = 0;  // BytePS: GPU reduce + copies to and from the host
  double bytescheduler_round_s = 0;   // ByteScheduler over all-reduce: per negotiation round
  double overlap_share = 1;           // wire speed while backward runs, (0, 1]
};

// The fitted constants murmur-sim ships with: derive_constants() of
// shipped_free_constants() (free_constants.h).
const PaperConstants& calibrated_constants();

struct MethodPrediction {
  double iteration_s = 0;
  double samples_per_s = 0;  // all GPUs
  double speedup = 0;        // over one GPU of the profile
  double compute_s = 0;
  double comm_s = 0;     // busy time of the communication units
  double exposed_s = 0;  // iteration - compute
  double overlap_s = 0;  // communication hidden behind compute
  int messages = 0;      // communication units per iteration
  double nic_bytes = 0;  // bytes each NIC sends per iteration (each direction)
};

// The methods' own settings, in bytes; murmur-peer's flags of the same
// names set them in floats (4 bytes each). Defaults: the systems' published
// ones.
struct MethodKnobs {
  double bytescheduler_partition_bytes = 4'000'000;  // ByteScheduler's largest partition
  double bytescheduler_credit_bytes = 16'000'000;    // ByteScheduler's bytes of partitions in flight
  double ps_partition_bytes = 4'096'000;             // BytePS's partition: the largest shard a server holds
};

// A preset network uses its calibrated constants; a network given by value
// ("custom": a cluster file's link lines) has none, and its stacks are taken
// to reach the links' own latency and bandwidth (an optimistic bound). A
// cluster of Stack::kMurmur runs murmur's own variants of the methods over
// its links and none of the GPU stacks' constants (docs/sim.md, "murmur-sim
// against murmur's own runs"); a host line slows compute by
// ClusterSpec::host_contention() under either stack.
MethodPrediction predict_paper_method(PaperMethod method, const ModelProfile& profile, const ClusterSpec& cluster,
                                      const PaperConstants& constants, const MethodKnobs& knobs = {});

}  // namespace murmur::sim::cost
