// IterationPipeline: the discrete-event core of murmur-sim's paper methods.
// One GPU's training loop, as the synchronous methods of the seed paper run
// it (every GPU alike, so one timeline stands for all): forward over the
// layers, backward in reverse order, and communication units (all-reduce
// buckets or parameter-server partitions) that start once every tensor they
// carry has its gradient and occupy the network for their cost. What each
// input means is on PipelineSpec's and CommUnit's fields below; the model
// with its reasons (why overlap_share, which method uses which order) is
// docs/sim.md, "The paper methods".
//
// run_pipeline simulates spec.iterations iterations and returns the steady
// state, measured between consecutive iterations after the first two.
// MURMUR_CHECKs the spec (forward_s and backward_s of one size > 0,
// slots >= 1, iterations >= 3, overlap_share in (0, 1]). Pure function;
// thread-safe.
#pragma once

#include <vector>

namespace murmur::sim::cost {

struct CommUnit {
  std::vector<int> layers;  // forward indices of the tensors it carries
  double bytes = 0;
  // Per-operation overhead (negotiation, kernel launch, request handling);
  // up to PipelineSpec::slots units overlap theirs.
  double fixed_s = 0;
  // The bytes on the bottleneck resource (a NIC, the PCIe bus), which
  // serializes them: one unit's wire time at a time.
  double wire_s = 0;
  int priority = 0;  // lower runs first when the order is by priority
  // Work on one serial host thread before the unit may take a slot (a
  // negotiation round every worker must agree on): units pass through it
  // one at a time in readiness order, pipelined with earlier units' wire
  // time.
  double host_s = 0;
  // > fixed_s: what fixed_s costs while backward runs (murmur's threads
  // waiting for cores the host's compute holds: LinkSpec::busy_latency_s);
  // full speed again after. 0: fixed_s throughout.
  double busy_fixed_s = 0;
};

// Order among ready units: FIFO by readiness (Horovod, BytePS), or by
// CommUnit::priority (ByteScheduler: paper_methods gives a unit its lowest
// forward index). Ties keep unit order.
enum class UnitOrder { kFifo, kPriority };

struct PipelineSpec {
  std::vector<double> forward_s;   // per layer, forward order
  std::vector<double> backward_s;  // per layer, forward order
  std::vector<CommUnit> units;
  int slots = 1;  // units in flight at once (a pool of workers), each until its wire time ends
  // > 0: a credit in bytes instead of slots (ByteScheduler's): a unit starts
  // when the bytes in flight plus its own fit, or when nothing is in flight.
  double credit_bytes = 0;
  // With credit_bytes: the credit is refilled only when it empties (murmur's
  // ByteScheduler: its leader picks the ready units of highest priority
  // that fit, announces them, and all run until the last ends), not unit by
  // unit (ByteScheduler's sliding window). A window's units start
  // window_open_s after it opens (the announcement), all at once.
  bool refill_when_empty = false;
  double window_open_s = 0;
  UnitOrder order = UnitOrder::kFifo;
  // True: the next iteration's forward waits for every unit (an optimizer
  // step after a synchronize). False: layer j's forward waits only for the
  // units that carry layer j's tensors (ByteScheduler).
  bool barrier = true;
  int iterations = 6;  // simulated; the first two are warm-up
  // (0, 1]: wire speed while backward runs (collective kernels and copies
  // compete with it for SMs and PCIe); full speed after.
  double overlap_share = 1;
};

struct PipelineResult {
  double iteration_s = 0;  // steady state
  double compute_s = 0;    // forward + backward
  double comm_s = 0;       // sum over units of host + fixed + wire (busy time, not wall)
  double exposed_s = 0;    // iteration - compute: communication not hidden
  double overlap_s = 0;    // communication hidden behind compute
  int units = 0;
};

PipelineResult run_pipeline(const PipelineSpec& spec);

}  // namespace murmur::sim::cost
