#include "peer/train/trainer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "common/log.h"
#include "common/trace.h"
#include "gossip/algorithm/registry.h"
#include "kernels/compress.h"
#include "peer/data/batcher.h"
#include "peer/data/fashion_mnist.h"
#include "peer/data/partition.h"
#include "peer/events/peer_events.h"
#include "peer/model/lr_schedule.h"
#include "peer/model/model.h"
#include "peer/model/optimizer.h"
#include "peer/train/checkpoint.h"
#include "peer/train/epoch_plan.h"
#include "peer/train/evaluation.h"
#include "peer/train/gradient_staging.h"
#include "peer/train/join_state.h"
#include "peer/train/metric_names.h"
#include "peer/train/metrics_writer.h"
#include "peer/train/peer_state_sections.h"
#include "peer/train/resume_plan.h"
#include "peer/train/shared_evaluation.h"

namespace murmur::peer::train {

namespace {

using Clock = std::chrono::steady_clock;
namespace event = metric::event;
namespace key = metric::key;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::uint64_t peak_rss_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

model::Device choose_device(const std::string& device) {
  if (device == "cpu") return model::Device::kCpu;
  if (device == "cuda") return model::Device::kCuda;
  if (device == "auto") return kernels::cuda_device_available() ? model::Device::kCuda : model::Device::kCpu;
  throw std::invalid_argument("--device '" + device + "': expected cpu, cuda or auto");
}

nlohmann::json links_json(const PeerStats& stats) {
  nlohmann::json links = nlohmann::json::object();
  for (const auto& l : stats.links) {
    links[std::to_string(l.rank)] = {
        {key::kHost, l.host}, {key::kBytesSent, l.bytes_sent}, {key::kBytesReceived, l.bytes_received}};
  }
  return links;
}

// A loss that is not finite stops the peer with the step and advice instead
// of gossiping NaNs.
void check_finite(double loss, long step, const TrainOptions& o) {
  if (!std::isfinite(loss)) {
    throw std::runtime_error("the loss is " + std::to_string(loss) + " at step " + std::to_string(step + 1) +
                             ": training diverged (lower --lr" +
                             (gossip::algorithm_info(o.peer.algorithm).uses_gamma ? " or --gamma" : "") + ")");
  }
}

const TrainOptions& checked(const TrainOptions& o) {
  if (o.epochs < 1) throw std::invalid_argument("--epochs " + std::to_string(o.epochs) + " must be >= 1");
  if (o.batch < 1) throw std::invalid_argument("--batch " + std::to_string(o.batch) + " must be >= 1");
  if (o.resume && o.checkpoint_dir.empty()) throw std::invalid_argument("--resume needs --checkpoint-dir");
  return o;
}

model::ModelSpec model_spec(const TrainOptions& o, model::Device device) {
  auto spec = model::parse_model_spec(o.model, device);
  spec.max_batch = std::max(o.batch, 256);
  return spec;
}

std::unique_ptr<model::Model> initialized_model(const model::ModelSpec& spec, std::uint64_t seed) {
  auto model = model::make_model(spec);
  model->initialize(seed);  // the same start on every rank
  return model;
}

// Running means over one epoch's steps.
struct EpochTotals {
  double loss_sum = 0;
  std::int64_t correct = 0, seen = 0;
  // 0 for an epoch without steps (a member that joined at its last step).
  double loss() const { return seen == 0 ? 0.0 : loss_sum / seen; }
  double accuracy() const { return seen == 0 ? 0.0 : static_cast<double>(correct) / seen; }
};

// One peer's run, phase by phase: the constructor sets up (data, model,
// the group, this rank's shard), run() resumes, trains the epochs and
// writes the summary. The members are what the phases share, declared in
// the order the set-up builds them: data before the network, so that a
// missing dataset fails this rank at once, with its path, instead of after
// everyone has joined.
class TrainingRun {
 public:
  explicit TrainingRun(const TrainOptions& options);
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  TrainSummary run();

 private:
  PeerConfig peer_config();
  void resume();
  void write_start();
  EpochTotals train_epoch(int epoch);
  model::StepResult train_step();
  bool before_forward_layer(std::size_t layer);
  void settle_update();
  void close_pending_step();
  void step_peer(long step, int epoch, long step_in_epoch);
  void sleep_extra_compute();
  void end_epoch(int epoch, const EpochTotals& totals);
  void take_shard(int members, int position);
  JoinState join_state_now();
  void join();
  void repartition_if_the_view_changed(int epoch);
  void on_view(const PeerView& view);
  void save_checkpoint_after(int epoch);
  TrainSummary finish();
  nlohmann::json result_event(const TrainSummary& summary, const PeerStats& stats);

  Accuracy timed_eval();
  void write_timed(nlohmann::json fields);
  void write_eval(int epoch, long step, const Accuracy& accuracy, const PeerStats& stats);
  void write_step(int epoch, long s, const EpochTotals& totals);

  const Clock::time_point start_ = Clock::now();
  const TrainOptions& o_;
  const data::PartitionSpec partition_spec_;
  const model::Device device_;
  const model::ModelSpec model_spec_;
  const data::FashionMnist data_;
  const std::unique_ptr<model::Model> model_;
  model::SgdOptimizer optimizer_;
  // The buffer the gradient methods average (host memory; set in the
  // constructor). Before peer_: the Peer's algorithm reads it until the
  // Peer is gone, on an error path too (an open round is finished then).
  std::optional<GradientStaging> gradient_staging_;
  Peer peer_;
  const bool averages_gradients_;  // the algorithm averages gradients before the optimizer step
  const int rank_, world_;
  std::optional<MetricsWriter> metrics_;
  long steps_per_epoch_ = 0;
  model::LrScheduleSpec schedule_;
  std::size_t shard_examples_ = 0;
  std::optional<data::Batcher> batcher_;
  std::uint64_t partition_generation_ = 0;     // the view the shard was cut for
  std::int64_t schedule_steps_per_epoch_ = 0;  // what schedule_ was made for
  // The step whose peer_.step() runs, for join_state_now (with
  // --layerwise-update, the step before the one in progress).
  int epoch_now_ = 0;
  long step_in_epoch_now_ = 0;
  long step_now_ = 0;
  // --layerwise-update: the step whose optimizer update is still to come,
  // layer by layer, in the next forward pass (before_forward_layer), or at
  // once where parameters are read (settle_update).
  struct PendingUpdate {
    long step = 0;
    int epoch = 0;
    long step_in_epoch = 0;
    double learning_rate = 0;
  };
  std::optional<PendingUpdate> pending_;
  std::vector<std::size_t> layer_offsets_;  // gradient layer k: floats [offsets[k], offsets[k + 1])
  double forward_wait_seconds_ = 0;         // this step's waits inside the forward pass
  bool view_adopted_ = false;               // on_view ran (peer_.step() re-averaged the parameters)
  long first_step_in_epoch_ = 0;            // a joiner enters first_epoch_ here
  std::optional<JoinState> joined_;         // what a joiner's sponsor sent

  int first_epoch_ = 0;
  long step_ = 0;
  int batcher_pass_ = 0;
  std::size_t resume_position_ = 0;  // examples of batcher_pass_ already taken (a checkpoint's)
  data::Batch batch_, eval_scratch_;
  double compute_seconds_ = 0;
  // Training time = time - setup - evaluation: the setup (data, group,
  // resume) and the test-set passes that draw the accuracy curve are the
  // measurement's cost, not training's; a time-to-accuracy comparison
  // between systems that evaluate differently subtracts them.
  double setup_seconds_ = 0;
  double eval_seconds_ = 0;
  Accuracy local_test_;
};

TrainingRun::TrainingRun(const TrainOptions& options)
    : o_(checked(options)),
      partition_spec_(data::parse_partition(o_.partition)),
      device_(choose_device(o_.device)),
      model_spec_(model_spec(o_, device_)),
      data_(data::load_fashion_mnist(o_.data_dir.empty() ? data::default_fashion_mnist_dir() : o_.data_dir)),
      model_(initialized_model(model_spec_, o_.seed)),
      optimizer_(model_->parameter_count(), device_,
                 {.momentum = o_.momentum, .weight_decay = o_.weight_decay, .nesterov = o_.nesterov}),
      peer_(peer_config()),
      averages_gradients_(peer_.averages_gradients()),
      rank_(peer_.rank()),
      world_(peer_.world_size()) {
  set_log_rank(rank_);
  metrics_.emplace(expand_rank(o_.metrics, rank_));

  // A joiner's shard is cut once it knows the view that admits it (join()).
  take_shard(world_, peer_.joining() ? 0 : rank_);
  // The schedule keeps the steps per epoch of the whole job: a view change
  // re-cuts the data, not the learning-rate curve.
  schedule_steps_per_epoch_ = steps_per_epoch_;
  schedule_ = lr_schedule(o_, steps_per_epoch_);
  peer_.on_view_change([this](const PeerView& view) { on_view(view); });

  auto params = model_->parameters();
  peer_.add_tensor("model", params.data(), params.size(),
                   device_ == model::Device::kCuda ? MemoryKind::kDevice : MemoryKind::kHost);
  if (averages_gradients_) {
    // Each layer's gradient goes to the algorithm as soon as backward has
    // it, so that its all-reduce runs while the layers below are computed
    // (through a host copy on cuda: gradient_staging.h).
    gradient_staging_.emplace(device_, model_->gradients(), model_->gradient_layer_sizes());
    const auto handed = gradient_staging_->host();
    peer_.set_gradients(handed.data(), handed.size(), model_->gradient_layer_sizes());
    // A view change re-averages the momentum with the parameters: the
    // survivors of a lost round would otherwise go on apart. A CUDA
    // optimizer's momentum is device memory, which the view's re-averaging
    // cannot read: there it is not handed over (docs/seed-methods.md,
    // "Membership views").
    if (o_.momentum != 0 && device_ != model::Device::kCuda) {
      auto momentum = optimizer_.momentum();
      peer_.set_optimizer_state(momentum.data(), momentum.size());
    }
    model_->set_gradient_hook([this](std::size_t layer) {
      gradient_staging_->to_host(layer);
      peer_.gradient_ready(layer);
    });
  }
  if (o_.layerwise_update) {
    if (!averages_gradients_)
      throw std::invalid_argument(
          "--layerwise-update needs an algorithm that averages gradients (bsp-a2a, "
          "wfbp-a2a, mg-wfbp, bytescheduler-a2a, the -ps forms, signsgd, topk-sgd); --algorithm " +
          o_.peer.algorithm + " averages models");
    layer_offsets_.push_back(0);
    for (std::size_t n : model_->gradient_layer_sizes()) layer_offsets_.push_back(layer_offsets_.back() + n);
    model_->set_forward_hook([this](std::size_t layer) { return before_forward_layer(layer); });
  }
}

PeerConfig TrainingRun::peer_config() {
  PeerConfig config = o_.peer;
  // A member that sponsors a joiner hands it where the job is; a joiner
  // takes it (join()).
  config.join_state = [this] { return encode_join_state(join_state_now()); };
  config.on_join_state = [this](const std::string& bytes) {
    joined_ = decode_join_state(bytes, model_->parameter_count(), o_.epochs);
    // Now, before the view's re-averaging that follows inside the same
    // step() (set_optimizer_state): the joiner enters it with its sponsor's
    // momentum, as with its sponsor's parameters.
    if (!joined_->momentum.empty()) write_device_vector(device_, optimizer_.momentum(), joined_->momentum);
  };
  config.on_schedule_decision = [this](const std::string& decision) {
    // Scheduler decisions go to the metrics file, which is opened once the
    // rank is known (decisions come from step(), after that).
    if (!metrics_) return;
    auto record = nlohmann::json::parse(decision);
    record[key::kTime] = seconds_since(start_);
    metrics_->write(record);
  };
  return config;
}

TrainSummary TrainingRun::run() {
  if (peer_.joining()) join();
  if (o_.resume && !peer_.joining()) resume();
  write_start();
  setup_seconds_ = seconds_since(start_);
  batcher_->start_epoch(batcher_pass_);
  batcher_->seek(resume_position_);
  for (int epoch = first_epoch_; epoch < o_.epochs; ++epoch) {
    // A joiner's first epoch is the members' epoch in progress: they cut
    // it at its start, and cut again only at its end; so does the joiner
    // (join() gave it a shard of its view and the members' step count).
    // Cutting here would change its steps per epoch, and it would reach the
    // epoch's end, and its collectives, at another step than the members.
    if (!(peer_.joining() && epoch == first_epoch_)) repartition_if_the_view_changed(epoch);
    end_epoch(epoch, train_epoch(epoch));
    if (o_.stop_after_epoch > 0 && epoch + 1 >= o_.stop_after_epoch) {
      peer_log().info("stopping after epoch {} of {} (--stop-after-epoch); --resume continues from its checkpoint",
                      epoch + 1, o_.epochs);
      break;
    }
  }
  return finish();
}

void TrainingRun::resume() {
  const auto path = checkpoint_path(o_.checkpoint_dir, rank_);
  auto c = load_checkpoint(path);
  const PeerView view = peer_.view();
  const ResumePlan plan = plan_resume(c, path,
                                      {rank_, world_, o_.model, model_->parameter_count(), o_.peer.algorithm,
                                       view.generation, std::vector<int>(view.ranks.begin(), view.ranks.end())});
  // Ranks that resume from different epochs would gossip out of step. The
  // variance over ranks is the same number on every rank, so either all
  // of them refuse or none does.
  const double mean = peer_.average(static_cast<double>(c.epoch));
  const double mean_square = peer_.average(static_cast<double>(c.epoch) * c.epoch);
  if (mean_square - mean * mean > 1e-9) {
    throw CheckpointError("checkpoint " + path + " is after epoch " + std::to_string(c.epoch) +
                          ", but other ranks' checkpoints are from other epochs");
  }
  write_parameters(*model_, c.parameters);
  if (!c.momentum.empty()) write_device_vector(device_, optimizer_.momentum(), c.momentum);
  if (plan.algorithm_state) {
    peer_.load_state(join_peer_state(c.algorithm_state, plan.schedule_state ? c.schedule_state : std::string(),
                                     model_->parameter_count()),
                     plan.other_view);
    batcher_pass_ = c.data_pass;
    resume_position_ = c.data_position;
  }
  first_epoch_ = c.epoch;
  step_ = c.step;
  peer_log().info("resumed after epoch {} (step {}): {}", c.epoch, c.step, plan.note);
}

void TrainingRun::write_start() {
  metrics_->write(
      {{key::kEvent, event::kStart},
       {key::kRank, rank_},
       {key::kWorldSize, world_},
       {key::kModel, o_.model},
       {key::kSchedule, o_.peer.schedule},
       {key::kParameters, model_->parameter_count()},
       {key::kAlgorithm, o_.peer.algorithm},
       {key::kCompressor, o_.peer.compressor},
       {key::kTopology, o_.peer.topology},
       {key::kPeriod, o_.peer.period},
       {key::kPartition, data::describe(partition_spec_)},
       {key::kShardExamples, shard_examples_},
       {key::kStepsPerEpoch, steps_per_epoch_},
       {key::kEpochs, o_.epochs},
       {key::kBatch, o_.batch},
       {key::kPid, static_cast<long>(::getpid())},
       // With setup_seconds (summary), when this process began:
       // what a restart's time into the job counts from.
       {key::kUnixTime, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}});
}

EpochTotals TrainingRun::train_epoch(int epoch) {
  EpochTotals totals;
  const long first = epoch == first_epoch_ ? first_step_in_epoch_ : 0;
  for (long s = first; s < steps_per_epoch_; ++s, ++step_) {
    // One step on the timeline: the compute, then the hand-off to the gossip.
    trace::Scope span(trace::Category::kStep, "step");
    const auto r = train_step();
    if (o_.layerwise_update)
      pending_ = PendingUpdate{step_, epoch, s, model::learning_rate_at(schedule_, step_)};
    else
      step_peer(step_, epoch, s);
    totals.loss_sum += r.loss * batch_.size;
    totals.correct += r.correct;
    totals.seen += batch_.size;
    // Extra evaluations inside the epoch, for time-to-accuracy curves.
    if (s + 1 < steps_per_epoch_ && is_evaluation_step(s + 1, steps_per_epoch_, o_.evals_per_epoch)) {
      settle_update();
      const auto mid = timed_eval();
      write_eval(epoch, step_ + 1, mid, peer_.stats());
    }
    if ((s + 1) % o_.log_every == 0 || s + 1 == steps_per_epoch_) write_step(epoch, s, totals);
  }
  settle_update();  // the epoch's end evaluates, checkpoints and may re-cut the data
  return totals;
}

// peer_.step() after step `step`'s update (its view changes, a joiner's
// admission: join_state_now reports this step).
void TrainingRun::step_peer(long step, int epoch, long step_in_epoch) {
  step_now_ = step;
  epoch_now_ = epoch;
  step_in_epoch_now_ = step_in_epoch;
  peer_.step();
}

// --layerwise-update, from the forward pass (Model::set_forward_hook):
// before gradient layer `layer` runs, the previous step's mean of it, then
// its update; after the last layer (layer == layers), the round is closed
// and the previous step's peer_.step() made, before backward starts the
// next round. A view adopted there re-averaged the parameters the forward
// pass had read: true asks the model to run it again, so that backward
// sees one model, the one the step without the flag would have used. The
// waits are communication, not compute.
bool TrainingRun::before_forward_layer(std::size_t layer) {
  const auto start = Clock::now();
  if (pending_ && layer + 1 < layer_offsets_.size()) {
    {
      trace::Scope span(trace::Category::kWait, "wait_layer_averaged");
      peer_.wait_layer_averaged(layer);
      gradient_staging_->to_device(layer);
    }
    forward_wait_seconds_ += seconds_since(start);
    trace::Scope span(trace::Category::kCompute, "optimizer_layer");
    const std::size_t offset = layer_offsets_[layer], floats = layer_offsets_[layer + 1] - offset;
    optimizer_.step_slice(model_->parameters().subspan(offset, floats), model_->gradients().subspan(offset, floats),
                          offset, pending_->learning_rate);
    return false;
  }
  if (layer + 1 < layer_offsets_.size()) return false;  // the first step: nothing pending
  view_adopted_ = false;
  if (pending_) {
    {
      trace::Scope span(trace::Category::kWait, "average_gradients");
      peer_.average_gradients();  // every layer was waited for: the round closes at once
    }
    close_pending_step();
    forward_wait_seconds_ += seconds_since(start);
  }
  // After the round, before the next: as the whole-model update's place in
  // the step, this sleep never overlaps communication.
  sleep_extra_compute();
  return view_adopted_;
}

// --layerwise-update: the pending update, whole, where the parameters are
// read next (evaluations, the epoch's end): the same update, bit for bit.
void TrainingRun::settle_update() {
  if (!pending_) return;
  {
    trace::Scope span(trace::Category::kWait, "average_gradients");
    peer_.average_gradients();
    gradient_staging_->all_to_device();
  }
  {
    trace::Scope span(trace::Category::kCompute, "optimizer");
    const auto start = Clock::now();
    optimizer_.step(model_->parameters(), model_->gradients(), pending_->learning_rate);
    compute_seconds_ += seconds_since(start);
  }
  close_pending_step();
}

// After the pending step's round was closed (average_gradients(), by the
// caller: once, since a second call would start another round) and its
// update made: its peer_.step().
void TrainingRun::close_pending_step() {
  const PendingUpdate done = *pending_;
  pending_.reset();
  step_peer(done.step, done.epoch, done.step_in_epoch);
}

void TrainingRun::sleep_extra_compute() {
  if (o_.extra_compute_ms <= 0) return;
  // A GPU peer's step keeps its CPU free: sleep, do not spin.
  trace::Scope span(trace::Category::kCompute, "extra_compute");
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o_.extra_compute_ms));
}

// The next batch (the shard starts over when it runs out), forward/backward
// and the optimizer's step.
model::StepResult TrainingRun::train_step() {
  if (!batcher_->next(batch_)) {
    batcher_->start_epoch(++batcher_pass_);
    batcher_->next(batch_);
  }
  const auto compute_start = Clock::now();
  forward_wait_seconds_ = 0;
  const auto r = [&] {
    trace::Scope span(trace::Category::kCompute, "forward_backward");
    return model_->train_batch(batch_.x.data(), batch_.y.data(), batch_.size);
  }();
  if (o_.layerwise_update) {
    // This step's update is made by the next forward pass (train_epoch
    // records it as pending).
    compute_seconds_ += seconds_since(compute_start) - forward_wait_seconds_;
    check_finite(r.loss, step_, o_);
    return r;
  }
  double averaging_seconds = 0;
  if (averages_gradients_) {
    // The gradients' mean over the members, before the update (the wait is
    // communication, not compute: the algorithm counts it).
    trace::Scope span(trace::Category::kWait, "average_gradients");
    const auto averaging_start = Clock::now();
    peer_.average_gradients();
    gradient_staging_->all_to_device();
    averaging_seconds = seconds_since(averaging_start);
  }
  {
    trace::Scope span(trace::Category::kCompute, "optimizer");
    optimizer_.step(model_->parameters(), model_->gradients(), model::learning_rate_at(schedule_, step_));
  }
  sleep_extra_compute();
  compute_seconds_ += seconds_since(compute_start) - averaging_seconds;
  check_finite(r.loss, step_, o_);
  return r;
}

// This rank's shard when the data is cut into `members` shards (iid or
// Dirichlet, from the job's seed: every member cuts the same way), and the
// steps per epoch that go with it (the same on every member).
void TrainingRun::take_shard(int members, int position) {
  auto shards = data::partition(partition_spec_, data_.train.labels, data_.train.num_classes, members, o_.seed);
  auto shard = std::move(shards[static_cast<std::size_t>(position)]);
  cap_shard(shard, o_);
  shards.clear();
  shards.shrink_to_fit();
  steps_per_epoch_ = train::steps_per_epoch(data_.train.size(), members, o_.train_examples, o_.batch);
  shard_examples_ = shard.size();
  batcher_.emplace(data_.train, std::move(shard), o_.batch, shuffle_seed(o_, rank_));
}

// At an epoch boundary, after a view change: the training set is cut again
// over the live members, so that no example is left out from this epoch
// on. (The epoch in which a member was lost misses the rest of its shard.)
// Every member is at the same round here, so they all see the same view.
void TrainingRun::repartition_if_the_view_changed(int epoch) {
  const PeerView view = peer_.view();
  if (view.generation == partition_generation_) return;
  partition_generation_ = view.generation;
  const auto at = std::find(view.ranks.begin(), view.ranks.end(), rank_);
  const int position = static_cast<int>(at - view.ranks.begin());
  take_shard(static_cast<int>(view.ranks.size()), position);
  batcher_->start_epoch(batcher_pass_);
  peer_log().info("epoch {}: data cut again over the {} members of view {}: shard {} of {} examples, {} steps",
                  epoch + 1, view.ranks.size(), view.generation, position, shard_examples_, steps_per_epoch_);
  write_timed({{key::kEvent, event::kRepartition},
               {key::kEpoch, epoch + 1},
               {key::kStep, step_},
               {key::kGeneration, view.generation},
               {key::kPosition, position},
               {key::kShardExamples, shard_examples_},
               {key::kStepsPerEpoch, steps_per_epoch_}});
}

// A view the gossip adopted (from inside step()): a metrics record and the
// event murmur-run shows once per generation.
void TrainingRun::on_view(const PeerView& view) {
  view_adopted_ = true;
  nlohmann::json lost = nlohmann::json::array();
  std::vector<int> lost_ranks;
  for (const auto& d : view.lost) {
    lost.push_back({{key::kRank, d.rank}, {key::kHost, d.host}, {key::kReason, d.reason}});
    lost_ranks.push_back(d.rank);
  }
  const bool gap = std::isfinite(view.spectral_gap);
  write_timed(
      {{key::kEvent, event::kView},
       {key::kStep, step_now_},
       {key::kUnixTime, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
       {key::kGeneration, view.generation},
       {key::kMembers, view.ranks},
       {key::kLost, lost},
       {key::kJoined, view.joined},
       {key::kSpectralGap, gap ? nlohmann::json(view.spectral_gap) : nlohmann::json(nullptr)},
       {key::kGraph, view.topology}});
  if (o_.events)
    events::emit_event(events::to_json(events::ViewEvent{rank_, view.generation, static_cast<int>(view.ranks.size()),
                                                         lost_ranks, view.joined, view.spectral_gap}));
}

// Where this member is, for a joiner it sponsors: called from inside
// peer_.step() of step step_ (the local update made, the round not yet
// started), which the joiner enters with this member's model.
JoinState TrainingRun::join_state_now() {
  JoinState s;
  s.step = step_now_;
  s.epoch = epoch_now_;
  s.step_in_epoch = step_in_epoch_now_;
  s.steps_per_epoch = steps_per_epoch_;
  s.schedule_steps_per_epoch = schedule_steps_per_epoch_;
  s.partition_generation = partition_generation_;
  s.momentum = read_device_vector(device_, optimizer_.momentum());
  return s;
}

// A joiner's first step(): it blocks until the job admits this member,
// then the sponsor's model and state arrive (on_join_state); the joiner
// continues from the step after the sponsor's, on its shard of the view
// that admitted it (the members cut the same at the next epoch boundary).
void TrainingRun::join() {
  peer_.step();
  if (!joined_) throw std::runtime_error("joined the job but its sponsor sent no training state");
  const JoinState& s = *joined_;  // its momentum is in the optimizer (on_join_state)
  step_ = s.step + 1;
  first_epoch_ = s.epoch;
  first_step_in_epoch_ = s.step_in_epoch + 1;
  schedule_steps_per_epoch_ = s.schedule_steps_per_epoch;
  schedule_ = lr_schedule(o_, schedule_steps_per_epoch_);
  const PeerView view = peer_.view();
  const auto at = std::find(view.ranks.begin(), view.ranks.end(), rank_);
  take_shard(static_cast<int>(view.ranks.size()), static_cast<int>(at - view.ranks.begin()));
  steps_per_epoch_ = s.steps_per_epoch;  // the members' (they cut again only at the epoch's end)
  // The members' cut, so that at the epoch's end this member cuts again
  // when they do (over the same view, into the same steps per epoch).
  partition_generation_ = s.partition_generation;
  // Joined at an epoch's last step: no step of it is left, but its end (the
  // evaluation and the collectives every member makes there) still is.
  peer_log().info("joined the running job as rank {} at step {} (epoch {}, step {} of it), view {}", rank_, step_,
                  first_epoch_ + 1, first_step_in_epoch_, view.generation);
}

void TrainingRun::end_epoch(int epoch, const EpochTotals& totals) {
  // The round in flight belongs to this epoch's model.
  peer_.flush();
  local_test_ = timed_eval();
  const double consensus = peer_.consensus_distance();
  const auto stats = peer_.stats();
  write_eval(epoch, step_, local_test_, stats);
  write_timed({{key::kEvent, event::kEpoch},
               {key::kEpoch, epoch + 1},
               {key::kStep, step_},
               {key::kLoss, totals.loss()},
               {key::kTrainAccuracy, totals.accuracy()},
               {key::kTestLoss, local_test_.mean_loss()},
               {key::kTestAccuracy, local_test_.fraction()},
               {key::kConsensusDistance, consensus},
               {key::kBytesSent, stats.bytes_sent},
               {key::kBytesReceived, stats.bytes_received},
               {key::kLinks, links_json(stats)},
               {key::kComputeSeconds, compute_seconds_},
               {key::kCommunicationWaitSeconds, stats.wait_seconds},
               {key::kCommunicationThreadSeconds, stats.comm_seconds},
               {key::kCommunicationThreadCpuSeconds, stats.comm_cpu_seconds},
               {key::kCommunicationOverlapSeconds, stats.overlap_seconds},
               {key::kRounds, stats.rounds}});
  peer_log().info("epoch {}/{}: loss {:.4f}, train accuracy {:.4f}, test accuracy {:.4f}, consensus distance {:.3g}",
                  epoch + 1, o_.epochs, totals.loss(), totals.accuracy(), local_test_.fraction(), consensus);
  if (!o_.checkpoint_dir.empty()) save_checkpoint_after(epoch);
}

// Every rank, at the same epoch end: the round in flight is folded in first,
// so that the algorithm's state is complete (Peer::save_state).
void TrainingRun::save_checkpoint_after(int epoch) {
  peer_.flush();
  Checkpoint c;
  c.rank = rank_;
  c.world_size = world_;
  c.model = o_.model;
  c.epoch = epoch + 1;
  c.step = step_;
  c.parameters = read_parameters(*model_);
  c.momentum = read_device_vector(device_, optimizer_.momentum());
  c.algorithm = o_.peer.algorithm;
  split_peer_state(peer_.save_state(), c.algorithm_state, c.schedule_state);
  c.data_pass = batcher_pass_;
  c.data_position = batcher_->position();
  const PeerView view = peer_.view();
  c.view_generation = view.generation;
  c.view_members.assign(view.ranks.begin(), view.ranks.end());
  save_checkpoint(checkpoint_path(o_.checkpoint_dir, rank_), c);
}

// Leaves the gossip, evaluates the averaged model (an exact all-reduce) and
// writes the summary.
TrainSummary TrainingRun::finish() {
  peer_.finish();
  if (first_epoch_ >= o_.epochs || local_test_.count == 0) {
    local_test_ = evaluate_range(*model_, data_.test, 0, data_.test.size(), model_spec_.max_batch, eval_scratch_);
  }
  std::vector<float> averaged(peer_.parameter_count());
  peer_.averaged_model(averaged.data());
  const auto average_test = evaluate_shared(peer_, *model_, averaged, data_.test, model_spec_.max_batch, eval_scratch_);

  const auto stats = peer_.stats();
  TrainSummary summary;
  summary.test_accuracy = local_test_.fraction();
  summary.average_model_test_accuracy = average_test.fraction();
  summary.bytes_sent = stats.bytes_sent;
  summary.bytes_received = stats.bytes_received;
  summary.wall_seconds = seconds_since(start_);
  summary.peak_rss_bytes = peak_rss_bytes();
  const nlohmann::json result = result_event(summary, stats);
  nlohmann::json record = result;
  record[key::kEvent] = event::kSummary;
  record[key::kLinks] = links_json(stats);
  metrics_->write(record);
  if (o_.events) events::emit_event(result);
  return summary;
}

// The result event murmur-run receives: events::ResultEvent's keys plus
// the run's settings and costs.
nlohmann::json TrainingRun::result_event(const TrainSummary& summary, const PeerStats& stats) {
  const std::uint64_t dataset_bytes =
      data_.train.pixels.size() + data_.train.labels.size() + data_.test.pixels.size() + data_.test.labels.size();
  nlohmann::json result =
      events::to_json(events::ResultEvent{rank_, summary.test_accuracy, summary.average_model_test_accuracy,
                                          summary.bytes_sent, summary.bytes_received, summary.wall_seconds});
  result[key::kHost] = peer_.host(rank_);
  result[key::kAlgorithm] = o_.peer.algorithm;
  result[key::kCompressor] = o_.peer.compressor;
  result[key::kTopology] = o_.peer.topology;
  result[key::kModel] = o_.model;
  result[key::kParameters] = model_->parameter_count();
  result[key::kPeakRssBytes] = summary.peak_rss_bytes;
  result[key::kModelBufferBytes] = model_->buffer_bytes();
  result[key::kDatasetBytes] = dataset_bytes;
  result[key::kComputeSeconds] = compute_seconds_;
  result[key::kSetupSeconds] = setup_seconds_;
  result[key::kEvalSeconds] = eval_seconds_;
  result[key::kCommunicationWaitSeconds] = stats.wait_seconds;
  result[key::kCommunicationThreadSeconds] = stats.comm_seconds;
  result[key::kCommunicationThreadCpuSeconds] = stats.comm_cpu_seconds;
  result[key::kCommunicationOverlapSeconds] = stats.overlap_seconds;
  result[key::kSteps] = step_;
  return result;
}

Accuracy TrainingRun::timed_eval() {
  const auto eval_start = Clock::now();
  trace::Scope span(trace::Category::kCompute, "evaluate");
  auto accuracy = evaluate_range(*model_, data_.test, 0, data_.test.size(), model_spec_.max_batch, eval_scratch_);
  eval_seconds_ += seconds_since(eval_start);
  return accuracy;
}

// Adds the time since start and its split into evaluation and training.
void TrainingRun::write_timed(nlohmann::json fields) {
  const double now = seconds_since(start_);
  fields.update(nlohmann::json{{key::kTime, now},
                               {key::kEvalSeconds, eval_seconds_},
                               {key::kTrainSeconds, now - setup_seconds_ - eval_seconds_}});
  metrics_->write(fields);
}

void TrainingRun::write_eval(int epoch, long step, const Accuracy& accuracy, const PeerStats& stats) {
  write_timed({{key::kEvent, event::kEval},
               {key::kEpoch, epoch + 1},
               {key::kStep, step},
               {key::kTestAccuracy, accuracy.fraction()},
               {key::kTestLoss, accuracy.mean_loss()},
               {key::kBytesSent, stats.bytes_sent},
               {key::kPeriod, stats.period},
               {key::kRatio, stats.ratio}});
}

// A step line after step s (0-based) of the epoch, and the progress event
// murmur-run displays.
void TrainingRun::write_step(int epoch, long s, const EpochTotals& totals) {
  const auto stats = peer_.stats();
  write_timed({{key::kEvent, event::kStep},
               {key::kStep, step_ + 1},
               {key::kEpoch, epoch + 1},
               {key::kLoss, totals.loss()},
               {key::kTrainAccuracy, totals.accuracy()},
               {key::kLr, model::learning_rate_at(schedule_, step_)},
               {key::kBytesSent, stats.bytes_sent},
               {key::kBytesReceived, stats.bytes_received},
               {key::kComputeSeconds, compute_seconds_},
               {key::kCommunicationWaitSeconds, stats.wait_seconds},
               {key::kPeriod, stats.period},
               {key::kRatio, stats.ratio}});
  if (o_.events) {
    events::emit_event(events::to_json(events::ProgressEvent{rank_, epoch + 1, o_.epochs, s + 1, steps_per_epoch_,
                                                             totals.loss(), totals.accuracy(), stats.bytes_sent}));
  }
}

}  // namespace

TrainSummary train(const TrainOptions& o) { return TrainingRun(o).run(); }

}  // namespace murmur::peer::train
