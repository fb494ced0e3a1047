// Gossip and baseline algorithms: one interface, chosen by name.
//
//   FabricCommunicator comm(group->transport(), group->peers());
//   auto topo = make_topology({.kind = "ring", .nodes = group->size()});
//   AlgorithmOptions o; o.compressor = "topk:0.01"; o.gamma = 0.05;
//   auto algo = make_algorithm("choco", o, comm, topo.get());
//   for (...) { sgd_update(x); algo->step(x); }
//   algo->finish(x);
//
// Names: dpsgd, choco, sgp, adpsgd (gossip; need a topology), allreduce,
// topk-allreduce, local-sgd (centralized baselines; topology ignored),
// bsp-a2a, wfbp-a2a, mg-wfbp, bytescheduler-a2a, bsp-ps, wfbp-ps,
// bytescheduler-ps, signsgd, topk-sgd (gradient averaging: the survey's
// methods, below); the registry (registry.h) is the list, with each
// algorithm's traits.
//
// Semantics of step(params): `params` is the caller's tensor after its local
// update. Every H-th call (H = options.period; calls are counted from 1) is a
// communicating step: it folds the result of the previous round into params
// and starts the next round on a snapshot of params. Folding keeps the local
// progress made meanwhile: params <- result(snapshot) + (params - snapshot)
// (additive algorithms: params += delta(snapshot)). Overlap, per algorithm:
//   dpsgd, choco, sgp   overlap on by default: round r runs on the
//                       communication thread while the caller computes, and
//                       step() waits for it only at the next communicating
//                       step (one round of staleness, as in overlap-SGP).
//   allreduce, topk-allreduce, local-sgd
//                       overlap off by default: step() starts the round and
//                       waits for it, so params hold the exact result on
//                       return. options.overlap = true gives the delayed form.
//   adpsgd              never waits for a global barrier: step() sends an
//                       averaging request to one neighbour and returns; a
//                       serving thread answers neighbours' requests at any
//                       time. step() waits only if its previous request is
//                       still unanswered (at most one in flight).
// flush(params) waits for the round in flight and folds it in. finish(params)
// ends participation (adpsgd: keeps serving neighbours until every neighbour
// has finished too); step() after finish() is a bug.
//
// Gradient averaging (registry.h: averages == Averages::kGradients). These
// algorithms average GRADIENTS before the optimizer step instead of models
// after it: set_gradients() once with the gradient buffer and its layers,
// then each step gradient_ready(layer) from the backward pass as soon as
// that layer's slice is final (the algorithm may start communicating it at
// once, on its own thread, while the caller computes the layers below),
// average_gradients() after the backward pass (blocks until every slice
// holds the mean over the view's members), the optimizer's update, step().
// step() communicates nothing for them; it adopts membership views (see
// gradient_algorithm.h). Every other algorithm ignores the three calls.
//
// Blocking and failures: step/flush/finish block only as described. A
// PeerError (a peer died or stalled past options.timeout_s) surfaces from the
// next step/flush/finish with the peer's rank and host in its message; the
// algorithm is then failed and rethrows it on every later call.
// Threads: one caller thread drives an instance; it runs its own
// communication thread (and adpsgd a serving thread). stats() may be called
// from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gossip/algorithm/communicator.h"
#include "gossip/algorithm/view.h"
#include "gossip/topology/topology.h"
#include "murmur/gossip_options.h"

namespace murmur::gossip {

// The job's settings (GossipOptions: period, overlap, compressor, gamma,
// seed, ...; one declaration, one set of defaults) plus what only an
// algorithm instance needs. make_algorithm reads the knobs; `algorithm`,
// `topology` and `schedule` are resolved by the caller (gossip_setup.h
// builds all three from a GossipOptions).
struct AlgorithmOptions : GossipOptions {
  bool average = true;       // allreduce, topk-allreduce: mean (else sum)
  std::uint8_t channel = 1;  // tag channel, 1..127: one per concurrent instance
  double timeout_s = 60;     // a stalled peer becomes a PeerError after this
  // adpsgd partner rule: "random" (a uniform neighbour) or "mutual" (step s:
  // rank ^ 2^(s mod log2 n) when that is a neighbour, as on a hypercube: every
  // pair picks each other at the same time; else random).
  std::string pick = "random";
  // Largest compression ratio retune() may set (receive buffers are sized
  // for it); 0: the ratio of `compressor`, which then cannot grow.
  double max_ratio = 0;
  // Transfer receipts (the round algorithms; adpsgd ignores it): every
  // receiver answers each message with a 24-byte receipt saying how long its
  // receive took (posting to completion), and each send's TransferSample
  // waits for it (receiver_seconds), so that a scheduler can tell a late
  // receiver from a slow link. Every rank of a job must set the same value:
  // a rank expecting receipts from one that sends none keeps at most
  // Traffic::kMaxPendingReceipts receives posted per peer and then times its
  // sends alone; a rank sending receipts to one that expects none leaves
  // them unmatched at the other end. The scheduler sets it (murmur-peer
  // --schedule adaptive, schedule knob `receipts`).
  bool receipts = false;
  // A job whose membership may change (the Peer sets it with a view gate):
  // a peer whose link fails in a round is excused from that round (its
  // message is left out, its weight goes to the receiver's own value)
  // instead of failing the algorithm, until the view that drops it takes
  // effect (set_views). Off: a PeerError fails the algorithm (algorithm.h,
  // "Blocking and failures").
  bool tolerate_lost_peers = false;
};

struct LinkStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
};

struct AlgorithmStats {
  std::uint64_t steps = 0;
  std::uint64_t rounds = 0;  // rounds (adpsgd: exchanges) completed
  double wait_seconds = 0;   // caller time blocked on communication
  double comm_seconds = 0;   // communication-thread time inside rounds
  // The communication thread's CPU time inside rounds: the rounds' own work.
  // comm_seconds - comm_cpu_seconds is time a round waited, for neighbours'
  // messages or for a core.
  double comm_cpu_seconds = 0;
  std::map<int, LinkStats> links;  // by peer rank
  double push_sum_weight = 1;      // sgp: this rank's weight w
  double residual_norm = 0;        // topk-allreduce, choco: ||error feedback|| / ||x - x_hat||
  std::uint64_t served = 0;        // adpsgd: requests answered for neighbours
  std::uint64_t crossings = 0;     // adpsgd: exchanges where both ends asked each other at once
  // Rounds (adpsgd: exchanges) in which a lost peer's message was left out
  // (tolerate_lost_peers); a collective's result is not exact after one.
  std::uint64_t incomplete_rounds = 0;
  std::uint64_t view_generation = 0;  // the membership view in use
  // Gradient averaging: communication-thread time that ran while the caller
  // was still computing (not waiting in average_gradients() or
  // wait_layer_averaged(): the rest of its backward pass, and with the
  // layer-wise step the next forward pass); the rest of comm_seconds is
  // what the caller waited for.
  double overlap_seconds = 0;
};

// What the scheduler (gossip/schedule) may change while an algorithm runs.
// Zero fields are left as they are.
struct Tuning {
  // Communicate every `period`-th step, counted from the last communicating
  // step. Every rank must apply the same period at the same step (rounds
  // pair up across ranks); the scheduler agrees on it before calling.
  int period = 0;
  // Compression ratio of a sparse compressor (topk:r, randk:r). Chosen by
  // each sender alone: receivers decode whatever ratio arrives, up to
  // AlgorithmOptions::max_ratio.
  double ratio = 0;
  // A ratio for the next round only, after which `ratio` applies (the
  // scheduler's exploration: one round at a second message size). A later
  // retune() without one, before that round, changes only what follows it.
  double trial_ratio = 0;
};

// One completed send: how long `bytes` took from posting to completion. The
// scheduler estimates each link's latency and bandwidth from these.
struct TransferSample {
  int peer = -1;
  double bytes = 0;
  double seconds = 0;
  double end_time = 0;  // Communicator::now() at completion
  // The receiver's own time for the same message, posting its receive to
  // completion, from its receipt (AlgorithmOptions::receipts); < 0 without
  // one. Less than `seconds` when the receiver posted late: a message that
  // could not wait whole in the receiver's buffers then waited for the
  // receiver as well as the link (LinkEstimator::observe_with_receipt sets
  // that lateness aside; an eager message, already waiting, is its blind
  // spot).
  double receiver_seconds = -1;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  virtual void step(std::span<float> params) = 0;
  virtual void flush(std::span<float> params) = 0;
  virtual void finish(std::span<float> params) = 0;
  virtual AlgorithmStats stats() const = 0;

  // Scheduling hooks (caller thread, like step). retune() applies from the
  // next step on; what an algorithm cannot tune it ignores, and says so
  // through tunes_period() / tunes_ratio().
  virtual bool tunes_period() const { return false; }
  virtual bool tunes_ratio() const { return false; }
  virtual void retune(const Tuning&) {}
  // Called inside step(), on the caller's thread, when the previous round
  // has completed (its sends' samples are in take_transfer_samples) and
  // before the next round's message is made: a scheduler's last chance to
  // retune() that round, instead of the one after it. May call retune();
  // must not call step() and must not throw (the round would not start,
  // and the ranks would fall out of step). An empty function removes it.
  // Algorithms without rounds ignore it.
  virtual void set_before_round(std::function<void()> /*hook*/) {}
  virtual int period() const = 0;
  // The sends completed since the last call (bounded: the oldest are
  // dropped when nobody asks). Any thread.
  virtual std::vector<TransferSample> take_transfer_samples() { return {}; }
  // sqrt(mean square) of what the last round changed in params: how far
  // this rank's model was from its neighbours'. A local, free proxy for the
  // consensus distance, for the scheduler's guard; measured once retune()
  // has been called (0 before). Any thread.
  virtual double last_mixing_rms() const { return 0; }
  // sqrt(mean square) of what the caller's own steps changed in params
  // between the last two rounds, per step: the local progress that the
  // mixing corrects. Both scale with the learning rate, so their quotient
  // does not (the scheduler's guard compares it with the quotient of ranks
  // running least aggressive). Same conditions as last_mixing_rms. Both may
  // be estimated on a sample of the values (RoundAlgorithm: at most 8192,
  // in runs of 16 spread evenly). Any thread.
  virtual double last_local_step_rms() const { return 0; }

  // Membership (view.h, view_gate.h): before each round (adpsgd: each
  // step) the algorithm asks `views` whether a new view takes effect, and
  // adopts it (its graph, its members) before the round starts, on the
  // caller's thread. Call before the first step; `views` must outlive the
  // algorithm. Null: membership never changes.
  virtual void set_views(ViewSchedule* views) = 0;

  // Gradient hand-off (see "Gradient averaging" above), caller thread.
  // set_gradients: once, before the first step; `gradients` (host memory,
  // the caller's, valid for the algorithm's lifetime) is the concatenation
  // of layers of `layer_sizes` floats, front layer first. Between a step's
  // first gradient_ready() and the return of its average_gradients() the
  // algorithm reads and writes the handed-over slices; the caller must not
  // touch them. gradient_ready(layer): that layer's slice is final for this
  // step (any order; backward order overlaps best). average_gradients():
  // hands over the layers not handed over yet, then blocks until every
  // slice holds the mean over the members. Throws std::invalid_argument for
  // a bad layout or layer index, and a PeerError as step() does.
  // wait_layer_averaged(layer): the layer-wise optimizer step; after the
  // backward pass, hands over the layers not handed over yet (as
  // average_gradients() does) and blocks until `layer`'s slice alone holds
  // the mean; the caller may then update that layer, and must still call
  // average_gradients() (which closes the round) before step(). A method
  // that finishes layers in priority order (bytescheduler: front layers
  // first) returns as each is done; the others when the whole round is.
  virtual void set_gradients(std::span<float> /*gradients*/, std::vector<std::size_t> /*layer_sizes*/) {}
  // set_optimizer_state: optional, once, before the first step; `state`
  // (host memory, the caller's, valid for the algorithm's lifetime) is
  // what the caller's optimizer keeps beside the parameters (SGD's
  // momentum, Adam's moments), the same size on every rank. The members
  // agree on it as on the parameters: a view change re-averages both
  // (gradient_algorithm.h), so that they leave it with one model AND one
  // optimizer; with the momentum apart, identical mean gradients would
  // still move the models apart. The algorithm touches it only inside
  // step(). Model-averaging algorithms ignore it.
  virtual void set_optimizer_state(std::span<float> /*state*/) {}
  virtual void gradient_ready(std::size_t /*layer*/) {}
  virtual void wait_layer_averaged(std::size_t /*layer*/) {}
  virtual void average_gradients() {}

  // Checkpoints (docs/resilience.md, "Checkpoints"). The algorithm's own
  // state beyond the caller's parameters (registry.h: checkpoint_state), as
  // bytes that load_state() of the same algorithm with the same options
  // accepts (layout: state_blob.h). Caller thread, no round in flight (call
  // flush() first: MURMUR_CHECKed). Empty for algorithms without state.
  // The round counter is not in it: every rank resumes together, so rounds
  // (their tags and the view gate's counter) restart at 0 everywhere; the
  // rounds already run are kept only as the phase of a time-varying graph.
  virtual std::string save_state() const;
  // Restores it before the first step (MURMUR_CHECKed). Throws
  // std::invalid_argument naming what does not fit (another algorithm,
  // another layout, a malformed blob): the blob comes from a file. The
  // parameter count it was saved for is checked at the first step, against
  // the tensor given there (the same exception, from step()).
  virtual void load_state(std::string_view state);
  // The same, for a state saved under another membership view than the one
  // this algorithm starts in: what depends on the old neighbours is
  // re-derived at the first round (choco: keeps x_hat, recomputes s from the
  // new neighbours' public copies; sgp: restarts push-sum at w = 1 from the
  // parameters, the old weights no longer summing to the members;
  // topk-allreduce: keeps its error feedback, re-agrees the reference).
  virtual void load_state_from_other_view(std::string_view state);
};

// Throws std::invalid_argument naming the algorithm or option that does not
// fit (unknown name, a gossip algorithm without topology, a topology whose
// size is not comm.size() — with tolerate_lost_peers, larger than
// comm.size(): the transport may already know members admitted after the
// topology was made, which enter with a later view's graph —, choco on a
// time-varying topology, a bad
// compressor spec). `comm` and `topology` must outlive the algorithm. The
// names and what each algorithm needs are in registry.h.
// The error make_algorithm gives for a topology of the wrong size (also for
// callers that check a job's graph before they have a communicator).
[[noreturn]] void throw_topology_size(const std::string& algorithm, const Topology& topology, int ranks);

std::unique_ptr<Algorithm> make_algorithm(const std::string& name, const AlgorithmOptions& options, Communicator& comm,
                                          const Topology* topology);

}  // namespace murmur::gossip
