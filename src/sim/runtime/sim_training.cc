#include "sim/runtime/sim_training.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "peer/data/batcher.h"
#include "peer/data/partition.h"
#include "peer/model/lr_schedule.h"
#include "peer/model/model.h"
#include "peer/model/optimizer.h"
#include "peer/train/epoch_plan.h"
#include "peer/train/evaluation.h"

namespace murmur::sim::runtime {
namespace {

// One simulated rank's trainer state.
struct RankTrainer {
  std::unique_ptr<peer::model::Model> model;
  std::unique_ptr<peer::model::SgdOptimizer> optimizer;
  std::unique_ptr<peer::data::Batcher> batcher;
  peer::data::Batch batch;
  int batcher_pass = 0;
};

ModelProfile one_tensor_profile(const std::string& name, std::size_t parameters, int batch, double compute_s) {
  ModelProfile p;
  p.name = name;
  p.batch = batch;
  p.layers.push_back({"parameters", static_cast<std::int64_t>(parameters), compute_s, 0.0});
  p.single_gpu_samples_per_s = compute_s > 0 ? batch / compute_s : 1.0;
  return p;
}

}  // namespace

std::optional<EvalPoint> TrainingResult::first_at(double target) const {
  const auto it =
      std::find_if(evals.begin(), evals.end(), [&](const EvalPoint& e) { return e.test_accuracy >= target; });
  if (it == evals.end()) return std::nullopt;
  return *it;
}

TrainingResult run_training(const TrainingSetup& t, const peer::data::FashionMnist& data) {
  const peer::train::TrainOptions& o = t.training;
  const int ranks = t.gossip.cluster.gpus;
  auto fail = [](const std::string& what) { throw std::invalid_argument("murmur-sim training run: " + what); };
  if (o.epochs < 1) fail("epochs must be >= 1, got " + std::to_string(o.epochs));
  if (o.batch < 1) fail("batch must be >= 1, got " + std::to_string(o.batch));
  if (o.evals_per_epoch < 1) fail("evals_per_epoch must be >= 1, got " + std::to_string(o.evals_per_epoch));
  if (!(t.compute_s >= 0)) fail("compute_s must be >= 0");
  if (t.eval_rank < 0 || t.eval_rank >= ranks)
    fail("eval_rank " + std::to_string(t.eval_rank) + " is not a rank of " + std::to_string(ranks));

  auto spec = peer::model::parse_model_spec(o.model, peer::model::Device::kCpu);
  spec.max_batch = std::max(o.batch, 256);
  const auto partition_spec = peer::data::parse_partition(o.partition);
  auto shards = peer::data::partition(partition_spec, data.train.labels, data.train.num_classes, ranks, o.seed);
  TrainingResult result;
  result.steps_per_epoch = peer::train::steps_per_epoch(data.train.size(), ranks, o.train_examples, o.batch);
  const long total_steps = result.steps_per_epoch * o.epochs;
  const auto schedule = peer::train::lr_schedule(o, result.steps_per_epoch);

  std::vector<RankTrainer> trainers(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    RankTrainer& me = trainers[r];
    me.model = peer::model::make_model(spec);
    me.model->initialize(o.seed);  // the same start on every rank, as murmur-peer
    me.optimizer = std::make_unique<peer::model::SgdOptimizer>(
        me.model->parameter_count(), peer::model::Device::kCpu,
        peer::model::SgdOptions{.momentum = o.momentum, .weight_decay = o.weight_decay, .nesterov = o.nesterov});
    auto shard = std::move(shards[r]);
    peer::train::cap_shard(shard, o);
    me.batcher =
        std::make_unique<peer::data::Batcher>(data.train, std::move(shard), o.batch, peer::train::shuffle_seed(o, r));
    me.batcher->start_epoch(0);
  }
  result.parameters = trainers.front().model->parameter_count();

  GossipSetup s = t.gossip;
  s.profile = one_tensor_profile(o.model, result.parameters, o.batch, t.compute_s);
  s.proxy = result.parameters;
  s.initial = peer::train::read_parameters(*trainers.front().model);
  s.warmup_iterations = 0;
  s.iterations = static_cast<int>(total_steps);
  s.flush_every = static_cast<int>(result.steps_per_epoch);
  s.local_step = [&](int rank, int iteration, std::span<float> params) {
    RankTrainer& me = trainers[rank];
    peer::train::write_parameters(*me.model, params);
    if (!me.batcher->next(me.batch)) {
      me.batcher->start_epoch(++me.batcher_pass);
      me.batcher->next(me.batch);
    }
    const auto step = me.model->train_batch(me.batch.x.data(), me.batch.y.data(), me.batch.size);
    if (!std::isfinite(step.loss)) {
      throw std::runtime_error("murmur-sim training run: rank " + std::to_string(rank) + ": the loss is " +
                               std::to_string(step.loss) + " at step " + std::to_string(iteration + 1) +
                               ": training diverged");
    }
    me.optimizer->step(me.model->parameters(), me.model->gradients(),
                       peer::model::learning_rate_at(schedule, iteration));
    const auto trained = me.model->parameters();
    std::copy(trained.begin(), trained.end(), params.begin());
  };
  peer::data::Batch eval_scratch;
  s.after_step = [&](int rank, int iteration, double time_s, std::span<const float> params) {
    const long done = iteration + 1;
    const long in_epoch = (done - 1) % result.steps_per_epoch + 1;
    if (rank != t.eval_rank || !peer::train::is_evaluation_step(in_epoch, result.steps_per_epoch, o.evals_per_epoch))
      return;
    peer::model::Model& m = *trainers[rank].model;
    peer::train::write_parameters(m, params);
    const auto a = peer::train::evaluate_range(m, data.test, 0, data.test.size(), spec.max_batch, eval_scratch);
    result.evals.push_back({done, time_s, a.fraction(), a.mean_loss()});
  };
  result.gossip = run_gossip(s);
  return result;
}

}  // namespace murmur::sim::runtime
