// How a training run is cut into epochs, fed and evaluated: the shard cap,
// the batch order's seed, the learning-rate schedule, steps per epoch and
// evaluation steps. Shared by murmur-peer's trainer (trainer.cc) and the
// simulator's (sim/runtime/sim_training.h), so that both step and evaluate alike.
// Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "peer/model/lr_schedule.h"
#include "peer/train/train_options.h"

namespace murmur::peer::train {

// A rank's shard cut to o.train_examples when that is > 0 (quick runs).
void cap_shard(std::vector<std::uint32_t>& shard, const TrainOptions& o);

// The seed of a rank's batch order (data::Batcher): the run's seed and the
// rank, so that ranks draw different orders and a resumed rank its own.
std::uint64_t shuffle_seed(const TrainOptions& o, int rank);

// o.lr with o.warmup_epochs of warm-up and o.lr_decay over o.epochs epochs
// of steps_per_epoch; std::invalid_argument as parse_lr_schedule.
model::LrScheduleSpec lr_schedule(const TrainOptions& o, long steps_per_epoch);

// Steps in one epoch: the mean shard (train_size / world, capped at
// train_examples when that is > 0) in batches of `batch`, the last one
// short. Every rank takes the same number, whatever its own shard's size.
// world >= 1, batch >= 1 (MURMUR_CHECK).
long steps_per_epoch(std::size_t train_size, int world, long train_examples, int batch);

// Whether the trainer evaluates once `step_in_epoch` (1-based) steps of an
// epoch of `steps_per_epoch` are done: at the epoch's end, and with
// evals_per_epoch > 1 every steps_per_epoch / evals_per_epoch steps inside
// it (at least every step). When evals_per_epoch does not divide the epoch
// that is more than evals_per_epoch passes: 16 steps and 3 evaluations
// give steps 5, 10, 15 and 16.
bool is_evaluation_step(long step_in_epoch, long steps_per_epoch, int evals_per_epoch);

}  // namespace murmur::peer::train
