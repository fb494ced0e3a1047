// GradientAlgorithm: the shared driver of the gradient-averaging methods
// (bsp-a2a, wfbp-a2a, mg-wfbp, bytescheduler-a2a, their -ps forms, signsgd,
// topk-sgd; algorithm.h, "Gradient averaging"). It owns one communication thread; a step's round starts on
// it at the step's first gradient_ready() and runs communicate(round), which
// a method implements: which layers to all-reduce, merged how, in what
// order. The caller's backward pass goes on meanwhile (the overlap), and
// average_gradients() waits for the round.
//
//   caller:  gradient_ready(L-1) ... gradient_ready(0)  average_gradients()  optimizer  step()
//   comm:         communicate(r): wait_ready(l), average(ranges) ...  done
//
// The layer-wise step: the caller may instead wait_layer_averaged(l) for
// each layer l, front first, and update it (the next forward pass runs on
// each as it is done), then average_gradients() closes the round. A method
// that finishes layers early says so with mark_averaged(l)
// (bytescheduler); for the others a layer is done when the round is.
//
// Exchange: average() runs a ring all-reduce (the A2A methods) or, for a
// method made with Exchange::kParameterServer, pushes the pieces to their
// servers and pulls the means (ps_exchange.h; bsp-ps, wfbp-ps,
// bytescheduler-ps): the same method code over either.
//
// Rounds: one per step, counted from 0; round r's messages carry r in
// their tags (with a task number below it), so that no two rounds mix.
//
// Membership views (view.h): step() asks the view schedule before the next
// round, and a change takes effect from it: the ring is rebuilt over the
// view's members (the rule of allreduce), a joiner receives its model
// (exchange_params), and then the members average their PARAMETERS and
// the optimizer state the caller handed over (set_optimizer_state) once
// (one exact ring all-reduce of both, on the caller's thread). Gradient averaging
// keeps models identical only while every rank applies the same mean
// gradient to the same model with the same momentum; a round that lost a
// peer left some ranks with their own gradient instead, in their
// parameters and their momentum, so both are re-agreed before gradients
// are averaged again. A method with measured constants (mg-wfbp) re-measures
// them for the new ring (view_adopted()). Over parameter servers, the
// servers (the view's first --servers members) keep nothing between steps,
// so the next round only re-shards the tensors over the live ones
// (ps_exchange.h): a step that lost a server is not redone, the models'
// re-averaging at the view repairs it.
//
// Failures: with tolerate_lost_peers a lost peer aborts the round's
// remaining all-reduces on the ranks that see it (their layers keep the
// local gradient; counted in incomplete_rounds) until the view that drops
// it; otherwise the PeerError fails the algorithm and every later call
// rethrows it.
//
// Threads: the caller's thread calls the Algorithm methods (stats() from
// any thread); communicate() runs on the communication thread and may read
// the layout and members_ (written only between rounds, ordered by the
// driver's mutex). Internal to algorithm/.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/ring_allreduce.h"
#include "gossip/algorithm/traffic.h"

namespace murmur::gossip::detail {

class ParameterServerExchange;

// A run of whole layers [first, last) of the gradient buffer.
struct LayerRange {
  std::size_t first = 0, last = 0;
};

// How average() averages: a ring all-reduce, or push/pull through
// parameter servers co-located with the members.
enum class Exchange { kRing, kParameterServer };

class GradientAlgorithm : public Algorithm {
 public:
  ~GradientAlgorithm() override;

  std::string name() const override { return name_; }
  void step(std::span<float> params) override;
  void flush(std::span<float> params) override;
  void finish(std::span<float> params) override;
  AlgorithmStats stats() const override;
  int period() const override { return 1; }
  void set_views(ViewSchedule* views) override { gate_ = views; }

  void set_gradients(std::span<float> gradients, std::vector<std::size_t> layer_sizes) override;
  void set_optimizer_state(std::span<float> state) override;
  void gradient_ready(std::size_t layer) override;
  void wait_layer_averaged(std::size_t layer) override;
  void average_gradients() override;

 protected:
  GradientAlgorithm(std::string name, const AlgorithmOptions& options, Communicator& comm,
                    Exchange exchange = Exchange::kRing);
  // Waits for the round in flight and stops the communication thread;
  // idempotent. Every final subclass calls it first in its destructor.
  void shutdown();

  // Communication thread: average every layer of round `round`. Layers
  // become ready in any order; average() only those wait_ready() said are.
  virtual void communicate(std::uint64_t round) = 0;
  // Caller thread, no round in flight: a new view is in use from `round`.
  virtual void view_adopted(std::uint64_t /*round*/) {}
  // The floats of every tensor the method hands average() (by task
  // number), for the parameter servers' sharding: by default the layers
  // (task = layer). Communication thread, at a round's first average().
  virtual std::vector<std::size_t> tensor_sizes() const;

  // Helpers for communicate() (communication thread).
  std::size_t layers() const { return offsets_.size() - 1; }
  std::size_t layer_floats(std::size_t layer) const { return offsets_[layer + 1] - offsets_[layer]; }
  std::size_t range_floats(LayerRange r) const { return offsets_[r.last] - offsets_[r.first]; }
  std::span<float> range_span(LayerRange r) const {
    return gradients_.subspan(offsets_[r.first], offsets_[r.last] - offsets_[r.first]);
  }
  // `layer` holds this round's final value (its mean, or the local gradient
  // where a lost peer aborted its all-reduce): wait_layer_averaged(layer)
  // returns. Optional (the round's end marks every layer).
  void mark_averaged(std::size_t layer);
  // Blocks until gradient_ready(layer) (or average_gradients()) this round.
  void wait_ready(std::size_t layer);
  // Blocks until some layer not in `taken` is ready; returns every ready
  // layer not in `taken`, ascending.
  std::vector<std::size_t> wait_more_ready(const std::vector<bool>& taken);
  // The seconds between the previous round's gradient_ready() calls and its
  // last one, by layer (layers handed over by average_gradients(): 0 after
  // the last explicit one). Empty before a round has completed.
  std::vector<double> last_ready_times() const;
  std::span<float> layer_span(std::size_t layer) const { return range_span({layer, layer + 1}); }
  // Averages `pieces` of the gradient buffer (each its own ring, all on the
  // wire at once) over the members; `tasks` numbers them within the round
  // for their tags (every rank must give the same pieces the same numbers,
  // in the same order of calls). Timed as communication for the overlap
  // figure. Returns false when a lost peer aborted them (they keep the
  // local gradient).
  bool average(std::uint64_t round, std::span<const std::span<float>> pieces, std::span<const std::uint32_t> tasks);
  // The sum of each of `pieces` over the members (piece i: task i of
  // `id`), under another phase pair (the re-averaging at a view change,
  // mg-wfbp's probe); not counted as communication time. False: a lost
  // peer aborted it (the pieces unchanged).
  bool sum_over_members(std::span<const std::span<float>> pieces, Phase reduce, Phase gather, std::uint64_t id);
  // One piece: task 0 of `id`.
  bool sum_over_members(std::span<float> piece, Phase reduce, Phase gather, std::uint64_t id) {
    return sum_over_members(std::span<const std::span<float>>(&piece, 1), reduce, gather, id);
  }
  // Counts [begin, end] (comm_.now()) as communication of this round, for
  // the overlap figure; `complete` false: a lost peer left the result
  // inexact. What average() does for its own; methods that communicate
  // otherwise (signsgd, topk-sgd) call it.
  void record_communication(double begin, double end, bool complete);
  fabric::Tag task_tag(Phase phase, std::uint64_t round, std::uint64_t task) const {
    return make_tag(options_.channel, phase, (round << 16) | (task & 0xffff));
  }
  std::set<int> wait_excusing(const std::vector<fabric::RequestPtr>& requests);
  int rank() const { return comm_.rank(); }

  const AlgorithmOptions options_;
  Communicator& comm_;
  Traffic traffic_;
  std::vector<int> members_;  // the ring: the view's members (written between rounds)

 private:
  void worker_loop();
  void check_not_failed() const;
  // The checks of a per-layer call (named `call` in the errors).
  void check_layer_call(const char* call, std::size_t layer) const;
  void start_round_locked();
  void hand_over_rest_locked(double now);
  void adopt(const ViewChange& change, std::span<float> params);

  const std::string name_;
  std::span<float> gradients_;                           // the caller's, from set_gradients
  std::span<float> optimizer_state_;                     // the caller's, from set_optimizer_state (may be empty)
  std::vector<std::size_t> offsets_;                     // layers() + 1 offsets into gradients_
  ViewSchedule* gate_ = nullptr;                         // caller thread only
  std::uint64_t next_round_ = 0;                         // caller thread only
  bool asked_gate_ = false;                              // caller thread only: before(next_round_) asked
  bool finished_ = false;                                // caller thread only
  std::vector<double> ready_at_;                         // caller thread only: this round's gradient_ready times
  std::vector<std::pair<double, double>> caller_waits_;  // caller thread only: this round's wait_layer_averaged()

  // Lock order: mutex_ is taken alone (never while calling out).
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<bool> ready_;     // this round's handed-over layers
  std::vector<bool> averaged_;  // this round's layers marked final (mark_averaged)
  bool round_open_ = false;     // a round started and average_gradients() has not returned
  bool has_job_ = false;        // the communication thread runs (or will run) the round
  std::uint64_t job_round_ = 0;
  bool stop_ = false;
  std::exception_ptr job_error_;
  std::exception_ptr failed_;  // sticky
  std::vector<double> last_ready_times_;
  std::vector<std::pair<double, double>> busy_;  // this round's communication intervals
  AlgorithmStats stats_;
  std::uint64_t incomplete_rounds_ = 0;
  bool round_incomplete_ = false;                // this round lost a peer in some all-reduce
  std::set<int> excused_logged_;                 // guarded by mutex_ (the communication and server threads wait)
  std::unique_ptr<ParameterServerExchange> ps_;  // Exchange::kParameterServer; communication thread only
  std::thread worker_;                           // last
};

}  // namespace murmur::gossip::detail
