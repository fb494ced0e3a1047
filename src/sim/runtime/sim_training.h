// run_training: a murmur-sim gossip run with real models. Every simulated
// peer trains its own model (peer/model) on its shard of Fashion-MNIST
// (peer/data) with the trainer's optimizer, learning-rate schedule and
// defaults (peer::train::TrainOptions), while the real algorithm, topology and
// scheduler gossip its parameters over the simulated network. A step costs
// `compute_s` on the virtual clock, whatever the host spends on it.
//
// What it answers that a real job on a small host cannot: time to accuracy
// on networks and accelerators the host does not have, without the host's
// CPU noise in the clock. The run is deterministic: the same setup gives
// the same evaluations, bit for bit, so two settings can be compared from
// one run each.
//
//   TrainingSetup t;
//   t.gossip.cluster = ...;            // links, episodes (a link drop)
//   t.gossip.options.algorithm = "choco"; t.gossip.options.compressor = "topk:0.1";
//   t.training.epochs = 3; t.training.evals_per_epoch = 16;
//   TrainingResult r = run_training(t, peer::data::load_fashion_mnist(dir));
//   r.first_at(0.85);                  // rank 0's first evaluation at 85%
//
// Like murmur-peer: the same steps per epoch, evaluation steps
// (peer/train/epoch_plan.h), shards, batch order, learning rate at each
// step, and a flush of the round in flight at each epoch's end (which moves
// where that round's mixing lands, as in the trainer). Differences, on
// purpose: every rank trains on the CPU, one at a time (the simulator runs
// one peer at a time), and the evaluations take no virtual time, as
// train_seconds leaves them out of a real job's time.
//
// Blocking: blocks the caller for the whole run (host time: about
// peers x steps training steps of the model plus the evaluations).
// Thread safety: independent calls may run concurrently; `data` is only read
// and must outlive the call.
// Errors: std::invalid_argument for bad options (model, partition, sizes,
// eval_rank), std::runtime_error naming the rank and step when a loss is not
// finite, and run_gossip's own.
#pragma once

#include <optional>
#include <vector>

#include "peer/data/fashion_mnist.h"
#include "peer/train/train_options.h"
#include "sim/runtime/gossip_run.h"

namespace murmur::sim::runtime {

struct TrainingSetup {
  // Cluster (stragglers multiply compute_s), options (algorithm,
  // compressor, topology, gamma, period, overlap, seed, schedule,
  // schedule_interval), timeout_s and on_decision are used as given; run_training sets
  // the profile, proxy, initial parameters, warm-up (none), iterations,
  // flush_every and the step hooks.
  GossipSetup gossip;
  // model, partition, train_examples, epochs, batch, lr, momentum,
  // weight_decay, nesterov, warmup_epochs, lr_decay, seed, evals_per_epoch;
  // the rest (peer, device, data_dir, extra_compute_ms, metrics,
  // checkpoints, resume, log_every, events) is not used.
  peer::train::TrainOptions training;
  double compute_s = 0.06;  // virtual seconds of computation per step
  int eval_rank = 0;        // whose model the evaluations read
};

struct EvalPoint {
  long step = 0;      // steps done, from 1
  double time_s = 0;  // virtual seconds when that step's gossip returned
  double test_accuracy = 0;
  double test_loss = 0;
};

struct TrainingResult {
  GossipResult gossip;
  std::vector<EvalPoint> evals;  // eval_rank's model at the trainer's evaluation steps
  long steps_per_epoch = 0;
  std::size_t parameters = 0;
  // The first evaluation at or above `target`, if any.
  std::optional<EvalPoint> first_at(double target) const;
};

TrainingResult run_training(const TrainingSetup& setup, const peer::data::FashionMnist& data);

}  // namespace murmur::sim::runtime
