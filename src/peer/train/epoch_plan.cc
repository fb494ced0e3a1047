#include "peer/train/epoch_plan.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace murmur::peer::train {

void cap_shard(std::vector<std::uint32_t>& shard, const TrainOptions& o) {
  if (o.train_examples > 0 && shard.size() > static_cast<std::size_t>(o.train_examples))
    shard.resize(static_cast<std::size_t>(o.train_examples));
}

std::uint64_t shuffle_seed(const TrainOptions& o, int rank) {
  return o.seed * 1000003 + static_cast<std::uint64_t>(rank);
}

model::LrScheduleSpec lr_schedule(const TrainOptions& o, long steps_per_epoch) {
  return model::parse_lr_schedule(o.lr, static_cast<long>(std::lround(o.warmup_epochs * steps_per_epoch)),
                                  steps_per_epoch * o.epochs, o.lr_decay);
}

long steps_per_epoch(std::size_t train_size, int world, long train_examples, int batch) {
  MURMUR_CHECK_GE(world, 1);
  MURMUR_CHECK_GE(batch, 1);
  std::size_t mean_shard = train_size / static_cast<std::size_t>(world);
  if (train_examples > 0) mean_shard = std::min<std::size_t>(mean_shard, static_cast<std::size_t>(train_examples));
  return static_cast<long>((mean_shard + static_cast<std::size_t>(batch) - 1) / static_cast<std::size_t>(batch));
}

bool is_evaluation_step(long step_in_epoch, long steps_per_epoch, int evals_per_epoch) {
  if (step_in_epoch == steps_per_epoch) return true;
  return evals_per_epoch > 1 && step_in_epoch % std::max<long>(1, steps_per_epoch / evals_per_epoch) == 0;
}

}  // namespace murmur::peer::train
