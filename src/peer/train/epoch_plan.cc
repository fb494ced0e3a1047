#include "peer/train/epoch_plan.h"

#include <algorithm>

#include "common/check.h"

namespace murmur::train {

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

}  // namespace murmur::train
