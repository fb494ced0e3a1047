#include "sim/cost/paper_methods.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/cost/iteration_pipeline.h"
#include "sim/cost/mg_wfbp.h"

namespace murmur::sim::cost {
namespace {

// BytePS keeps several partitions in flight (push of one while another is
// pulled); their per-partition handling overlaps.
constexpr int kBytePsSlots = 4;

struct MethodShape {
  PaperMethod method;
  const char* name;
  bool parameter_server;
};

constexpr MethodShape kShapes[] = {
    {PaperMethod::kBspA2A, "BSP-A2A", false},
    {PaperMethod::kWfbpA2A, "WFBP-A2A", false},
    {PaperMethod::kMgWfbp, "MG-WFBP", false},
    {PaperMethod::kByteSchedulerA2A, "ByteScheduler-A2A", false},
    {PaperMethod::kBspPs, "BSP-PS", true},
    {PaperMethod::kWfbpPs, "WFBP-PS", true},
    {PaperMethod::kByteSchedulerPs, "ByteScheduler-PS", true},
};

const MethodShape& shape(PaperMethod method) {
  for (const MethodShape& s : kShapes)
    if (s.method == method) return s;
  throw std::logic_error("unknown PaperMethod");
}

// A unit's cost as (fixed, wire) for `bytes` on this cluster.
class CostModel {
 public:
  CostModel(const ClusterSpec& cluster, const PaperConstants& constants, bool parameter_server)
      : n_(cluster.gpus),
        k_(cluster.nodes()),
        remote_ranks_(cluster.gpus - std::min(cluster.gpus, cluster.gpus_per_node)),
        constants_(constants),
        parameter_server_(parameter_server),
        murmur_(cluster.stack == Stack::kMurmur) {
    auto it = constants.networks.find(cluster.network);
    if (murmur_) {
      // murmur's fabric: what a message costs is the link's latency and
      // bandwidth as the cluster gives them (for an emulated profile, the
      // profile's plus the fabric's own per-message cost and throughput;
      // docs/sim.md, "murmur-sim against murmur's own runs"). No GPU stack
      // constant applies.
      const LinkSpec& inter = cluster.inter_node;
      stack_ = {inter.bandwidth_Bps, inter.latency_s, inter.bandwidth_Bps, inter.bandwidth_Bps, 2 * inter.latency_s};
      intra_ = cluster.intra_node;
      // While the host computes, a message waits for a core at each hop
      // (LinkSpec::busy_latency_s): the same hops, at the busy latency.
      busy_ring_step_s_ = k_ > 1 ? std::max(inter.busy_latency(), intra_.busy_latency()) : intra_.busy_latency();
      busy_ps_partition_s_ = 2 * inter.busy_latency();
      concurrent_ring_step_s_ =
          k_ > 1 ? std::max(inter.concurrent_message_s, intra_.concurrent_message_s) : intra_.concurrent_message_s;
    } else if (it != constants.networks.end()) {
      stack_ = it->second;
      intra_ = {constants.intra_ring_step_s, constants.intra_ring_bandwidth_Bps};
    } else {
      // A network given by value has no calibrated software efficiencies:
      // the stacks are taken to reach the links' own figures.
      const LinkSpec& inter = cluster.inter_node;
      // A push and a pull: two round trips of the link's latency.
      stack_ = {inter.bandwidth_Bps, inter.latency_s, inter.bandwidth_Bps, inter.bandwidth_Bps, 4 * inter.latency_s};
      intra_ = cluster.intra_node;
    }
  }

  // Ring all-reduce (NCCL): 2(n-1) steps of bytes/n each. Every hop of the
  // ring carries the same bytes at once (the steps pipeline), so the
  // slowest hop sets the pace: across nodes the ring runs through the NIC
  // and through the PCIe path inside each node, whichever is slower (on
  // InfiniBand that is PCIe: the paper's IB ring runs at the 4-GPU one's
  // speed). Each step waits for the slowest hop's latency too.
  void all_reduce(double bytes, CommUnit& unit) const {
    // murmur's ring starts at once on the communication thread: no
    // coordinator round, no kernel launch.
    unit.fixed_s = murmur_ ? 0 : constants_.horovod_op_s;
    if (n_ == 1) return;
    const double steps = 2.0 * (n_ - 1);
    const bool across = k_ > 1;
    const double step_s = across ? std::max(stack_.ring_step_s, intra_.latency_s) : intra_.latency_s;
    unit.fixed_s += steps * step_s;
    if (murmur_) unit.busy_fixed_s = steps * busy_ring_step_s_;
    const double bandwidth = across ? std::min(stack_.ring_bandwidth_Bps, intra_.bandwidth_Bps) : intra_.bandwidth_Bps;
    unit.wire_s = steps / n_ * bytes / bandwidth;
  }

  // BytePS: reduce inside the node and copy to the host, push to the
  // partition's server, pull the sum back, copy and broadcast. A
  // partition's requests cost a latency (two round trips through the
  // stack and the server's handling: per partition, overlapping with the
  // other partitions in flight); its bytes go through the local and the
  // network stage, which pipeline across partitions, so the slower one
  // sets the pace. Each NIC carries 2(k-1)/k of the bytes each way
  // (servers on every node share the load).
  //
  // murmur's servers are its peers, each behind its own NIC: a partition's
  // push crosses its worker's NIC once (to a remote server: (k-1)/k of the
  // bytes), and its pull leaves the SERVER's NIC once for each of the k-1
  // remote workers. With `servers` partitions in flight on as many
  // servers, those servers' NICs carry the pulls and the rest idle: per
  // byte, (k-1)/k + (k-1)/min(servers, k) over the link's bandwidth, which
  // is BytePS's 2(k-1)/k when every server has a share in flight.
  void push_pull(double bytes, CommUnit& unit, int servers) const {
    // On one node there are no remote servers: only the local stages.
    unit.fixed_s = k_ > 1 ? stack_.ps_partition_s : 0;
    if (murmur_ && k_ > 1) unit.busy_fixed_s = busy_ps_partition_s_;
    // murmur's servers sum in the worker's own memory: no GPU copies.
    const double local = murmur_ ? 0 : bytes / constants_.ps_local_bandwidth_Bps;
    double network = 0;
    if (k_ > 1 && murmur_) {
      const int active = servers > 0 ? std::min(servers, k_) : k_;
      network =
          (static_cast<double>(k_ - 1) / k_ + static_cast<double>(k_ - 1) / active) * bytes / stack_.ps_bandwidth_Bps;
    } else if (k_ > 1) {
      // A worker reaches the k-1 remote servers over one connection each:
      // on two nodes one connection carries everything.
      const double rate = std::min(stack_.ps_bandwidth_Bps, (k_ - 1) * stack_.ps_connection_Bps);
      network = 2.0 * (k_ - 1) / k_ * bytes / rate;
    }
    unit.wire_s = std::max(local, network);
  }

  // `servers`: the parameter servers the unit's partitions in flight reach
  // at once (0: all of them); read on murmur's stack only.
  void cost(double bytes, CommUnit& unit, int servers = 0) const {
    unit.bytes = bytes;
    if (parameter_server_)
      push_pull(bytes, unit, servers);
    else
      all_reduce(bytes, unit);
  }

  // Bytes each NIC sends per iteration for `model_bytes` of gradients.
  double nic_bytes(double model_bytes) const {
    if (k_ == 1) return 0;
    return parameter_server_ ? 2.0 * (k_ - 1) / k_ * model_bytes : 2.0 * (n_ - 1) / n_ * model_bytes;
  }

  // murmur's bytescheduler-a2a runs a window's partitions as concurrent
  // rings, their steps posted together (ring_allreduce.h): each further
  // ring of a window adds its messages' handling to every step
  // (LinkSpec::concurrent_message_s) where a lone ring pays a message's
  // whole latency. So that part of a ring's fixed cost moves to its wire
  // stage, which the pipeline serializes across units: k concurrent rings
  // then take steps x (latency + (k - 1) x concurrent) plus their bytes,
  // and a lone ring what it took before.
  void run_as_concurrent_ring(CommUnit& unit) const {
    if (!murmur_ || parameter_server_ || n_ == 1 || concurrent_ring_step_s_ <= 0) return;
    const double handling = 2.0 * (n_ - 1) * concurrent_ring_step_s_;
    unit.fixed_s = std::max(0.0, unit.fixed_s - handling);
    if (unit.busy_fixed_s > 0) unit.busy_fixed_s = std::max(unit.fixed_s, unit.busy_fixed_s - handling);
    unit.wire_s += handling;
  }

  bool murmur() const { return murmur_; }
  // One small message's cost (murmur's bytescheduler leader announcing a
  // window).
  double message_s() const { return k_ > 1 ? stack_.ring_step_s : intra_.latency_s; }

  // Horovod's coordinator (rank 0) gathering one small message from every
  // rank before it answers a negotiation round: the remote ranks' messages
  // reach it one after another, each a small message across the network
  // (its ranks on the same node answer over shared memory, ~1 us, left out).
  double gather_s() const { return remote_ranks_ * stack_.ring_step_s; }

 private:
  const int n_;
  const int k_;
  const int remote_ranks_;  // ranks on other nodes than rank 0
  const PaperConstants& constants_;
  const bool parameter_server_;
  const bool murmur_;
  StackOnNetwork stack_;
  LinkSpec intra_;  // the ring inside a node
  // murmur only: a ring step's and a push/pull's latency while compute runs.
  double busy_ring_step_s_ = 0;
  double busy_ps_partition_s_ = 0;
  double concurrent_ring_step_s_ = 0;  // murmur only: LinkSpec::concurrent_message_s
};

// Splits `bytes` into parts of at most `part` bytes.
std::vector<double> partitions(double bytes, double part) {
  std::vector<double> parts;
  const int count = std::max(1, static_cast<int>(std::ceil(bytes / part)));
  for (int i = 0; i < count; ++i) parts.push_back(std::min(part, bytes - part * i));
  return parts;
}

// Gradient tensors in the order backward produces them, with ready times.
std::vector<ReadyTensor> tensors_in_backward_order(const ModelProfile& profile, const PipelineSpec& spec) {
  std::vector<ReadyTensor> tensors;
  double t = 0;
  for (double f : spec.forward_s) t += f;
  for (std::size_t j = profile.layers.size(); j-- > 0;) {
    t += spec.backward_s[j];
    tensors.push_back(
        {static_cast<int>(j), static_cast<double>(profile.layers[j].parameters) * profile.bytes_per_parameter, t});
  }
  return tensors;
}

void add_unit(PipelineSpec& spec, const CostModel& cost, std::vector<int> layers, double bytes, double extra_fixed_s,
              int servers = 0) {
  CommUnit unit;
  unit.layers = std::move(layers);
  unit.priority = *std::min_element(unit.layers.begin(), unit.layers.end());
  cost.cost(bytes, unit, servers);
  unit.fixed_s += extra_fixed_s;
  if (unit.busy_fixed_s > 0) unit.busy_fixed_s += extra_fixed_s;
  spec.units.push_back(std::move(unit));
}

// Compute at the pace of the slowest GPU: synchronous methods wait for it.
PipelineSpec compute_spec(const ModelProfile& profile, const ClusterSpec& cluster, const PaperConstants& constants) {
  double slowdown = 1;
  for (int rank = 0; rank < cluster.gpus; ++rank) slowdown = std::max(slowdown, cluster.slowdown(rank));
  slowdown *= cluster.host_contention();
  PipelineSpec spec;
  for (const LayerProfile& layer : profile.layers) {
    spec.forward_s.push_back(layer.forward_s * slowdown);
    spec.backward_s.push_back(layer.backward_s * slowdown);
  }
  // overlap_share is the GPU's (collectives competing for SMs and PCIe);
  // murmur's host contention is in the compute times above.
  spec.overlap_share = cluster.stack == Stack::kMurmur ? 1.0 : std::min(1.0, constants.overlap_share);
  return spec;
}

// MG-WFBP: tensors merged into buckets where a message's startup cost
// outweighs its bytes.
void add_merged_units(PipelineSpec& spec, const CostModel& cost, const std::vector<ReadyTensor>& tensors) {
  // The startup and per-byte cost come from the same model that runs them.
  CommUnit probe;
  cost.cost(0, probe);
  CommUnit per_mb;
  cost.cost(1e6, per_mb);
  const double seconds_per_byte = (per_mb.wire_s - probe.wire_s) / 1e6;
  for (const std::vector<int>& bucket : merge_buckets(tensors, probe.fixed_s, seconds_per_byte)) {
    std::vector<int> layers;
    double bytes = 0;
    for (int i : bucket) {
      layers.push_back(tensors[static_cast<std::size_t>(i)].layer);
      bytes += tensors[static_cast<std::size_t>(i)].bytes;
    }
    add_unit(spec, cost, layers, bytes, 0);
  }
}

// ByteScheduler over all-reduce or parameter servers: fixed-size
// partitions sent in priority order (the front layers first), no barrier.
// Over all-reduce every worker must launch the same collectives in the
// same order, so each batch of partitions ByteScheduler releases (one
// tensor's, up to the credit) goes through a negotiation round of
// Horovod's background thread: serial, but pipelined with the transfers
// of earlier rounds (the host stage). That cost is per round, not per
// partition (the rounds batch a tensor's partitions) nor per byte.
// A round also waits for Horovod's coordinator to hear from every rank
// (CostModel::gather_s): a cost that grows with the ranks, not the model.
// Horovod alone negotiates once per 5 ms cycle for every tensor ready by
// then, off the wire's critical path; ByteScheduler releases a round only
// when the credit frees, so each round's gather is on it.
// Parameter servers need no agreement (a server sums what arrives), so
// ByteScheduler-PS pays only BytePS's per-partition handling.
void add_bytescheduler_units(PipelineSpec& spec, const CostModel& cost, const std::vector<ReadyTensor>& tensors,
                             const PaperConstants& constants, const MethodKnobs& knobs, bool ps) {
  const auto per_round = std::max<std::size_t>(
      1, static_cast<std::size_t>(knobs.bytescheduler_credit_bytes / knobs.bytescheduler_partition_bytes));
  // murmur's variant (src/gossip/algorithm/bytescheduler.cc): its leader
  // announces each window in one small message, and the trainer updates
  // the whole model after the round (no per-layer start of the next
  // forward).
  const double round_s = cost.murmur() ? cost.message_s() : constants.bytescheduler_round_s + cost.gather_s();
  for (const ReadyTensor& t : tensors) {
    const std::vector<double> parts = partitions(t.bytes, knobs.bytescheduler_partition_bytes);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      // The credit holds per_round partitions: as many servers pull at once.
      add_unit(spec, cost, {t.layer}, parts[i], 0, static_cast<int>(per_round));
      cost.run_as_concurrent_ring(spec.units.back());
      if (!ps && !cost.murmur() && i % per_round == 0) spec.units.back().host_s = round_s;
    }
  }
  spec.order = UnitOrder::kPriority;
  spec.barrier = cost.murmur();
  // murmur's windows: the leader's pick of what is ready, announced in one
  // message, and the next pick once the last of them ends.
  spec.refill_when_empty = cost.murmur();
  if (cost.murmur()) spec.window_open_s = round_s;
  // NCCL runs one collective at a time; the parameter servers take as
  // many partitions as the 16 MB credit allows (many small ones at once),
  // and so does murmur's bytescheduler-a2a, whose window's partitions run
  // as concurrent rings (their messages' latencies overlap, their handling
  // not: run_as_concurrent_ring).
  if (ps || cost.murmur()) spec.credit_bytes = knobs.bytescheduler_credit_bytes;
}

// The communication units of `method`, in the order backward produces
// their gradients.
void add_method_units(PaperMethod method, PipelineSpec& spec, const CostModel& cost,
                      const std::vector<ReadyTensor>& tensors, double model_bytes, const PaperConstants& constants,
                      const MethodKnobs& knobs) {
  std::vector<int> all_layers;
  for (const ReadyTensor& t : tensors) all_layers.push_back(t.layer);
  switch (method) {
    case PaperMethod::kBspA2A:
      add_unit(spec, cost, all_layers, model_bytes, 0);
      break;
    case PaperMethod::kWfbpA2A:
      for (const ReadyTensor& t : tensors) add_unit(spec, cost, {t.layer}, t.bytes, 0);
      break;
    case PaperMethod::kMgWfbp:
      add_merged_units(spec, cost, tensors);
      break;
    case PaperMethod::kByteSchedulerA2A:
    case PaperMethod::kByteSchedulerPs:
      add_bytescheduler_units(spec, cost, tensors, constants, knobs, shape(method).parameter_server);
      break;
    case PaperMethod::kBspPs:
      // BytePS does not fuse tensors: each is pushed and pulled in its own
      // partitions, all after backward (the units carry every layer, so
      // none is ready before the last gradient), all at once: as many
      // servers as there are partitions pull at once (murmur's stack).
      {
        std::vector<double> parts;
        for (const ReadyTensor& t : tensors)
          for (double part : partitions(t.bytes, knobs.ps_partition_bytes)) parts.push_back(part);
        for (double part : parts) add_unit(spec, cost, all_layers, part, 0, static_cast<int>(parts.size()));
      }
      // murmur's bsp-ps pushes every layer at once (one push/pull set).
      spec.slots = cost.murmur() ? std::max<int>(1, static_cast<int>(spec.units.size())) : kBytePsSlots;
      break;
    case PaperMethod::kWfbpPs:
      // A tensor's partitions are in flight together: a small tensor's one
      // partition is pulled from one server (murmur's stack).
      for (const ReadyTensor& t : tensors) {
        const std::vector<double> parts = partitions(t.bytes, knobs.ps_partition_bytes);
        if (cost.murmur()) {
          // murmur's wfbp-ps pushes all of a layer's partitions, waits for
          // their means, then goes on to the next layer
          // (ps_exchange.h): one unit per layer, whose partitions' request
          // latencies overlap (one fixed cost) and whose bytes spread over
          // as many servers as it has partitions. As partitions in units of
          // their own, one slot paid each one's latency in turn: the deep
          // MLP's 19-partition first layer alone 18 latencies too many
          // (docs/seed-methods.md, "The deep MLP's time-to-85% run,
          // predicted").
          add_unit(spec, cost, {t.layer}, t.bytes, 0, static_cast<int>(parts.size()));
        } else {
          for (double part : parts) add_unit(spec, cost, {t.layer}, part, 0, static_cast<int>(parts.size()));
        }
      }
      spec.slots = cost.murmur() ? 1 : kBytePsSlots;
      break;
  }
}

}  // namespace

const std::vector<PaperMethod>& paper_methods() {
  static const std::vector<PaperMethod> all = [] {
    std::vector<PaperMethod> v;
    for (const MethodShape& s : kShapes) v.push_back(s.method);
    return v;
  }();
  return all;
}

std::string paper_method_name(PaperMethod method) { return shape(method).name; }

PaperMethod paper_method_by_name(const std::string& name) {
  std::string known;
  for (const MethodShape& s : kShapes) {
    if (name == s.name) return s.method;
    known += (known.empty() ? "" : ", ") + std::string(s.name);
  }
  throw std::invalid_argument("unknown method '" + name + "' (known: " + known + ")");
}

MethodPrediction predict_paper_method(PaperMethod method, const ModelProfile& profile, const ClusterSpec& cluster,
                                      const PaperConstants& constants, const MethodKnobs& knobs) {
  const CostModel cost(cluster, constants, shape(method).parameter_server);
  PipelineSpec spec = compute_spec(profile, cluster, constants);
  const std::vector<ReadyTensor> tensors = tensors_in_backward_order(profile, spec);
  const double model_bytes = profile.gradient_bytes();
  add_method_units(method, spec, cost, tensors, model_bytes, constants, knobs);

  const PipelineResult run = run_pipeline(spec);
  MethodPrediction p;
  p.iteration_s = run.iteration_s;
  p.samples_per_s = cluster.gpus * profile.batch / run.iteration_s;
  p.speedup = p.samples_per_s / profile.single_gpu_samples_per_s;
  p.compute_s = run.compute_s;
  p.comm_s = run.comm_s;
  p.exposed_s = run.exposed_s;
  p.overlap_s = run.overlap_s;
  p.messages = run.units;
  p.nic_bytes = cost.nic_bytes(model_bytes);
  return p;
}

}  // namespace murmur::sim::cost
