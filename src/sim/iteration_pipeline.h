// IterationPipeline: the discrete-event core of murmur-sim's paper methods.
// One GPU's training loop, as the synchronous methods of the seed paper run
// it (every GPU alike, so one timeline stands for all): forward over the
// layers, backward in reverse order, and communication units (all-reduce
// buckets or parameter-server partitions) that start once every tensor they
// carry has its gradient and occupy the network for their cost.
//
// A unit's cost has two parts:
//   fixed_s   per-operation overhead (negotiation, kernel launch, request
//             handling); up to `slots` units overlap theirs (a credit or a
//             pool of worker threads);
//   wire_s    the bytes on the bottleneck resource (a NIC, the PCIe bus),
//             which serializes them: one unit's wire time at a time.
// Order among ready units: FIFO by readiness (Horovod, BytePS) or by layer
// priority, the lowest forward index first (ByteScheduler).
// The next iteration's forward of layer j waits for every unit (barrier, as
// an optimizer step after a synchronize) or only for the units that carry
// layer j's tensors (ByteScheduler: early layers start while late ones are
// still in flight).
//
// Communication that runs while the GPU computes gets only a share of its
// bandwidth (`overlap_share`): collective kernels and copies compete with
// the backward pass for SMs and PCIe. Units on the wire after backward ends
// run at full speed.
//
// The steady-state iteration time is measured between consecutive
// iterations after a warm-up. Pure function; thread-safe.
#pragma once

#include <vector>

namespace murmur::sim {

struct CommUnit {
  std::vector<int> layers;  // forward indices of the tensors it carries
  double bytes = 0;
  double fixed_s = 0;
  double wire_s = 0;
  int priority = 0;  // lower runs first when the order is by priority
};

enum class UnitOrder { kFifo, kPriority };

struct PipelineSpec {
  std::vector<double> forward_s;   // per layer, forward order
  std::vector<double> backward_s;  // per layer, forward order
  std::vector<CommUnit> units;
  int slots = 1;
  UnitOrder order = UnitOrder::kFifo;
  bool barrier = true;
  int iterations = 6;  // simulated; the first two are warm-up
  double overlap_share = 1;  // (0, 1]: wire speed while backward runs
};

struct PipelineResult {
  double iteration_s = 0;  // steady state
  double compute_s = 0;    // forward + backward
  double comm_s = 0;       // sum over units of fixed + wire (busy time, not wall)
  double exposed_s = 0;    // iteration - compute: communication not hidden
  double overlap_s = 0;    // communication hidden behind compute
  int units = 0;
};

PipelineResult run_pipeline(const PipelineSpec& spec);

}  // namespace murmur::sim
