// murmur::Peer: the embeddable face of murmur. A trainer hands murmur its
// parameter tensors, calls step() after each local update, and murmur
// gossips them with the peer's neighbours in the background. Nothing else of
// murmur (models, data loaders, launchers) is needed.
//
//   murmur::PeerConfig config;             // rank, size, rendezvous: from the
//   config.algorithm = "choco";            // environment murmur-run, Slurm or
//   config.compressor = "topk:0.01";       // Open MPI set, unless given here
//   murmur::Peer peer(config);
//   peer.add_tensor("weights", w.data(), w.size());
//   for (...) { sgd_update(w); peer.step(); }
//   peer.finish();
//   peer.average(w.data(), w.size());      // exact mean over all peers
//
// Membership (each field, when unset in PeerConfig, is taken from the
// environment in this order):
//   rank, world size   MURMUR_RANK / MURMUR_WORLD_SIZE, then SLURM_PROCID /
//                      SLURM_NTASKS, then OMPI_COMM_WORLD_RANK /
//                      OMPI_COMM_WORLD_SIZE; none of them: a job of one.
//   rendezvous         MURMUR_RENDEZVOUS ("host:port"). A job of one needs
//                      none; with host_rendezvous, rank 0 serves it itself.
//                      Under srun without it, rank 0 serves it on the
//                      step's first node at a port from Slurm's variables
//                      (docs/launching.md, "Slurm").
//   token, host name   MURMUR_TOKEN, MURMUR_HOST (else gethostname()).
//   link profile       MURMUR_LINK_PROFILE.
//   trace              MURMUR_TRACE: a file for this peer's timeline
//                      (docs/trace.md); "{rank}" in it becomes the rank.
//
// Tensors: float32, host or CUDA device memory (told by `kind`, or found out
// with kAuto). Gossip runs on the concatenation of the registered tensors in
// registration order; every rank must register the same sizes in the same
// order (the first step() checks this across ranks and throws naming the
// ranks that differ). The memory must stay valid until finish() or the
// destructor, and is read and written only inside Peer calls, on the
// caller's thread: the background round works on murmur's own copy.
//
// Gradient hand-off (docs/embedding.md, "Gradient hand-off"): the gradient
// methods (bsp-a2a, wfbp-a2a, mg-wfbp, bytescheduler-a2a, bsp-ps, wfbp-ps,
// bytescheduler-ps, signsgd, topk-sgd; docs/seed-methods.md) average
// GRADIENTS before the optimizer step instead of tensors after it. Hand
// the gradient buffer over once (set_gradients), then each step call
// gradient_ready(layer) from the backward pass as each layer's gradient is
// final, average_gradients() before the optimizer update, and step() after
// it as always. The other algorithms ignore the three calls, so a trainer
// may always make them.
//
// Blocking: the constructor blocks until every rank has joined (or
// join_timeout_s passes). step() blocks only where the algorithm needs its
// neighbours (see docs/embedding.md). average(), consensus_distance() and
// averaged_model() are collectives: every rank calls them in the same order.
//
// Membership views (docs/resilience.md): with survive_lost_peers (the
// default), a peer that dies, or stops answering past a deadline derived
// from the observed round times while its heartbeats have stopped too, is
// dropped from the job's membership view; every live peer adopts the new
// view at the same round, with the graph rebuilt for it, and goes on.
// view() says who is in; on_view_change() tells of each change. average()
// and the other collectives run over the live view. The job's rendezvous
// fails over to a standby hosted by a live peer if it is lost after join.
//
// Errors: std::invalid_argument for a configuration that cannot work (named
// field and value); std::runtime_error for faults of the job: a join that
// timed out, a rendezvous that cannot be reached, this peer declared lost by
// the others (it stopped too long: the message says so), or, without
// survive_lost_peers, a lost peer (the message names its rank and host).
// After such a failure every later call rethrows.
// std::logic_error for misuse: add_tensor() after the first step(), step()
// before any add_tensor().
//
// Thread safety: one thread drives a Peer; stats() may be called from any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "murmur/gossip_options.h"

namespace murmur {

enum class MemoryKind { kAuto, kHost, kDevice };

// The gossip settings and their defaults are those of GossipOptions
// (gossip_options.h), which PeerConfig extends with membership
// and the data plane. With an adaptive schedule, each decision is handed to
// on_schedule_decision as one JSON object (text), on the thread that calls
// step(); the callback must not call back into the Peer, and should not
// throw (an exception leaves step() with the round not started). The
// scheduler retunes the period and (choco with topk/randk) the ratio from its
// own measurements: agreed decisions every schedule_interval steps, and
// reactions to a slowed link (ratios only) before any round, from inside
// step().
struct PeerConfig : GossipOptions {
  // Membership (see above). Negative or empty: from the environment.
  int rank = -1;
  int world_size = -1;
  std::string rendezvous;        // "host:port"
  bool host_rendezvous = false;  // rank 0 serves the rendezvous at that port
  std::string token;
  std::string host_name;
  double join_timeout_s = 120;

  std::function<void(const std::string& json)> on_schedule_decision;

  // Data plane.
  std::string backend = "libfabric";  // libfabric | asio
  std::string provider = "auto";      // auto | tcp | shm | verbs | net | shm+tcp | shm+net | shm+verbs
  std::string link_profile;           // emulated links, e.g. "10gbe"; docs/link-profiles.md
  // The network the data plane (tcp, asio) binds to: an interface name
  // ("ib0", "eth1") or a subnet ("10.0.0.0/24"), as NCCL_SOCKET_IFNAME.
  // Empty: $MURMUR_INTERFACE, else loopback when every peer is on this
  // host, else the backend's choice (docs/launching.md, "Choosing the
  // network"). The control plane (rendezvous) is not moved.
  std::string interface;
  double timeout_s = 60;  // a peer silent this long is declared failed

  // The timeline (docs/trace.md): Chrome trace-event JSON written here when
  // the Peer is destroyed, "{rank}" replaced by the rank. Empty: from
  // MURMUR_TRACE; neither: no trace, and recording costs nothing.
  std::string trace;

  // Failures (see "Membership views" above; docs/resilience.md). Off: the
  // first lost peer fails every call of every other peer.
  bool survive_lost_peers = true;
  // A peer that has not answered for lost_peer_multiplier x the 99th
  // percentile of recent waits (at least lost_peer_floor_s, at most
  // timeout_s) is reported to the membership service, which declares it
  // lost if its heartbeats stopped as well; a slow but live peer is waited
  // for.
  double lost_peer_floor_s = 2;
  double lost_peer_multiplier = 8;

  // Joining a running job as a new member, with a rank the job assigns
  // (docs/resilience.md, "Joining"). Also when MURMUR_JOIN=1 or
  // MURMUR_RESTART_COUNT > 0 (murmur-run --join, --on-failure restart). The
  // first step() blocks until the job admits this peer, then overwrites the
  // registered tensors with a live member's (its sponsor's) and starts the
  // round every member starts with the view that admits it. That first
  // step() is the members' step in progress when the view took effect (the
  // one whose join_state() arrives): after it returns, the joiner must do
  // what the members do after that step, collectives included (average(),
  // consensus_distance(), ...), then go on with the next. A joiner that
  // skips that step's collectives leaves the members waiting in them for
  // it while it waits in the next round for them, until timeout_s fails
  // the job (tests/peer/resilience_test_peer.cc shows the shape). With a
  // gradient method the joiner makes that step() before its first
  // backward (gradient_ready(), average_gradients() and
  // wait_layer_averaged() throw std::logic_error before it, and the Peer
  // stays usable), so that its first gradient is taken on the job's model.
  bool join = false;
  // State beyond the tensors that a joiner needs (an optimizer's momentum,
  // the step, the epoch): the sponsor's join_state() reaches the joiner's
  // on_join_state(), inside that first step(), on the caller's thread of
  // each. join_state() runs inside the sponsor's step() of the step in
  // progress (the one the joiner's first step() stands for). Both may be
  // empty.
  std::function<std::string()> join_state;
  std::function<void(const std::string&)> on_join_state;
};

// A membership view: who takes part in the job from some round on.
struct PeerView {
  std::uint64_t generation = 0;  // grows by one or more at every change
  std::vector<int> ranks;        // the live members, ascending
  struct Departure {
    int rank = -1;
    std::string host;
    std::string reason;
  };
  std::vector<Departure> lost;  // since the previous view
  std::vector<int> joined;      // since the previous view
  double spectral_gap = 0;      // of the view's graph; NaN: none or not computed
  std::string topology;         // how the graph was rebuilt, one line
};

struct PeerLinkStats {
  int rank = 0;
  std::string host;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
};

struct PeerStats {
  std::uint64_t steps = 0;
  std::uint64_t rounds = 0;      // gossip rounds completed
  double wait_seconds = 0;       // caller time blocked in step()/flush()
  double comm_seconds = 0;       // background time inside rounds
  double comm_cpu_seconds = 0;   // the background thread's CPU time inside rounds (the rest waited)
  double overlap_seconds = 0;    // gradient hand-off: background time that ran while the caller computed
  std::uint64_t bytes_sent = 0;  // gossip payload, all links (collectives not included)
  std::uint64_t bytes_received = 0;
  std::uint64_t collective_bytes_sent = 0;  // average(), consensus_distance(), ...
  int period = 1;                           // now (the scheduler may change it)
  double ratio = 1;                         // compression ratio now (1: as configured / not a sparse compressor)
  std::string algorithm;
  std::string compressor;
  std::vector<PeerLinkStats> links;  // one per peer this rank exchanged with
};

class Peer final {
 public:
  explicit Peer(const PeerConfig& config);
  // Finishes if finish() was not called (errors are logged, not thrown) and
  // leaves the job.
  ~Peer();
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  int rank() const;
  int world_size() const;
  std::string host(int rank) const;

  // Before the first step() only. `count` floats at `data`.
  void add_tensor(const std::string& name, float* data, std::size_t count, MemoryKind kind = MemoryKind::kAuto);
  std::size_t parameter_count() const;

  // Gradient hand-off (see above). Whether the algorithm averages
  // gradients (the calls below do something).
  bool averages_gradients() const;
  // Before the first step(): `count` floats of host memory at `data` (the
  // model's gradients), the concatenation of layers of `layer_sizes`
  // floats, front layer first, the same on every rank. Valid until
  // finish(). Throws std::invalid_argument for device memory or sizes that
  // do not add up to `count`.
  void set_gradients(float* data, std::size_t count, const std::vector<std::size_t>& layer_sizes);
  // Before the first step(), optional: `count` floats of host memory at
  // `data`, the optimizer's state beside the parameters (SGD's momentum,
  // Adam's moments), the same size on every rank; valid until finish().
  // When a membership view changes (a peer lost or joined), the members
  // re-average it with the parameters, so that they go on with one model
  // and one optimizer: without it their momenta stay apart and so, step
  // after step, do their models. The peer touches it only inside step().
  // Only the gradient methods use it. Throws std::invalid_argument for
  // device memory.
  void set_optimizer_state(float* data, std::size_t count);
  // From the backward pass: layer `layer`'s gradient is final for this
  // step; it may be read and overwritten with the mean from now until
  // average_gradients() returns. Never blocks (but the first call of a
  // job runs the layout check step() would).
  void gradient_ready(std::size_t layer);
  // After the backward pass, before the optimizer update: hands over the
  // layers not handed over yet and blocks until every layer's gradient is
  // the mean over the live members.
  void average_gradients();
  // The layer-wise optimizer step, instead of waiting for every layer at
  // once: after the backward pass, blocks until layer `layer`'s gradient
  // alone is the mean (it hands over the layers not handed over yet, as
  // average_gradients() does); update that layer, and call
  // average_gradients() (it then returns at once) before step(). With
  // bytescheduler-a2a and bytescheduler-ps, front layers are done first,
  // so the next forward pass can start on them while the back layers still
  // communicate; the other methods return when the whole round is done.
  // A round that fails (a PeerError from a later wait, or from
  // average_gradients()) may do so after front layers were returned, and
  // updated by the caller: the model is then partly updated.
  void wait_layer_averaged(std::size_t layer);

  void step();    // after each local update
  void flush();   // wait for the round in flight and fold it into the tensors
  void finish();  // leave the gossip; tensors hold this rank's final model

  // For a trainer that stops early (Ctrl-C, an exception in its own code):
  // marks this rank as leaving so that its destruction leaves the job at
  // once, without finishing and without the barrier where ranks otherwise
  // wait for each other to leave. The others drop it from their view
  // straight away (a departure, as for a failed peer) and go on; they do
  // not wait for it to time out. Every later call that talks to the other
  // ranks throws std::logic_error naming `why`. From the thread that drives
  // the Peer; never blocks; idempotent (the first `why` stays). A rank
  // that hosts the rendezvous still waits, in the destructor, for the
  // others to leave it (bounded by timeout_s).
  void leave_now(const std::string& why);

  // Checkpoints: the gossip algorithm's own state and the adaptive
  // scheduler's (docs/resilience.md, "Checkpoints"), as opaque bytes for a
  // checkpoint file; the tensors themselves are the caller's to save. Call
  // between steps after flush(), on every rank (the first call joins the
  // gossip, as step() does). load_state() before the first step(), on every
  // rank, with what save_state() returned on this rank in a job with the
  // same configuration; `other_view`: saved under other members than the
  // present view's, so the algorithm re-derives what depends on its
  // neighbours and the scheduler starts afresh. Throws
  // std::invalid_argument naming what does not fit.
  std::string save_state();
  void load_state(std::string_view state, bool other_view = false);

  // Collectives (exact, blocking, outside the gossip).
  void average(float* data, std::size_t count, MemoryKind kind = MemoryKind::kAuto);
  double average(double value);
  // The mean of every rank's registered tensors, into `out` (host memory,
  // parameter_count() floats). The registered tensors are unchanged.
  void averaged_model(float* out);
  // sqrt(mean over ranks of ||x_i - x_mean||^2): how far the peers' models
  // have drifted apart. Zero for identical models.
  double consensus_distance();

  PeerStats stats() const;

  // The view the gossip runs in now. Any thread.
  PeerView view() const;
  // Whether this peer joins a running job (PeerConfig::join or the
  // environment): its first step() takes the job's model and state.
  bool joining() const;
  // Called with every new view the gossip adopts, on the thread that calls
  // step(), from inside it, before the round that uses the view. Must not
  // call back into the Peer.
  void on_view_change(std::function<void(const PeerView&)> callback);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace murmur
