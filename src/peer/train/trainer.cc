#include "peer/train/trainer.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "common/log.h"
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
#include "peer/train/metrics_writer.h"

namespace murmur::train {

namespace {

using Clock = std::chrono::steady_clock;

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
    links[std::to_string(l.rank)] = {{"host", l.host}, {"bytes_sent", l.bytes_sent},
                                     {"bytes_received", l.bytes_received}};
  }
  return links;
}

// Evaluates `parameters` (host) on this rank's slice of the test set and
// sums over ranks: every rank learns the accuracy of the same model on the
// whole set for 1/world of the work.
Accuracy evaluate_shared(Peer& peer, model::Model& model, std::span<const float> parameters,
                         const data::ImageDataset& test, int batch, data::Batch& scratch) {
  const auto local = read_parameters(model);
  write_parameters(model, parameters);
  const std::size_t world = static_cast<std::size_t>(peer.world_size());
  const std::size_t first = test.size() * peer.rank() / world;
  const std::size_t last = test.size() * (peer.rank() + 1) / world;
  const auto mine = evaluate_range(model, test, first, last - first, batch, scratch);
  write_parameters(model, local);
  Accuracy all;
  all.correct = std::llround(peer.average(static_cast<double>(mine.correct)) * world);
  all.count = std::llround(peer.average(static_cast<double>(mine.count)) * world);
  all.loss_sum = peer.average(mine.loss_sum) * world;
  return all;
}

}  // namespace

TrainSummary train(const TrainOptions& o) {
  const auto start = Clock::now();
  if (o.epochs < 1) throw std::invalid_argument("--epochs " + std::to_string(o.epochs) + " must be >= 1");
  if (o.batch < 1) throw std::invalid_argument("--batch " + std::to_string(o.batch) + " must be >= 1");
  if (o.resume && o.checkpoint_dir.empty()) throw std::invalid_argument("--resume needs --checkpoint-dir");
  const auto partition_spec = data::parse_partition(o.partition);
  const auto device = choose_device(o.device);
  auto model_spec = model::parse_model_spec(o.model, device);
  model_spec.max_batch = std::max(o.batch, 256);

  // Data before the network: a missing dataset fails this rank at once,
  // with its path, instead of after everyone has joined.
  const auto data = data::load_fashion_mnist(o.data_dir.empty() ? data::default_fashion_mnist_dir() : o.data_dir);
  auto model = model::make_model(model_spec);
  model->initialize(o.seed);  // the same start on every rank
  model::SgdOptimizer optimizer(model->parameter_count(), device,
                                {.momentum = o.momentum, .weight_decay = o.weight_decay, .nesterov = o.nesterov});

  // Scheduler decisions go to the metrics file, which is opened once the
  // rank is known.
  MetricsWriter* decisions_to = nullptr;
  PeerConfig peer_config = o.peer;
  peer_config.on_schedule_decision = [&decisions_to, start](const std::string& decision) {
    if (decisions_to == nullptr) return;
    auto record = nlohmann::json::parse(decision);
    record["time"] = seconds_since(start);
    decisions_to->write(record);
  };
  Peer peer(peer_config);
  const int rank = peer.rank(), world = peer.world_size();
  set_log_rank(rank);
  MetricsWriter metrics(expand_rank(o.metrics, rank));
  decisions_to = &metrics;

  auto shards = data::partition(partition_spec, data.train.labels, data.train.num_classes, world, o.seed);
  auto shard = std::move(shards[rank]);
  cap_shard(shard, o);
  shards.clear();
  shards.shrink_to_fit();
  const long steps_per_epoch = train::steps_per_epoch(data.train.size(), world, o.train_examples, o.batch);
  const auto schedule = lr_schedule(o, steps_per_epoch);
  data::Batcher batcher(data.train, shard, o.batch, shuffle_seed(o, rank));
  const std::size_t shard_examples = shard.size();
  shard = {};

  auto params = model->parameters();
  peer.add_tensor("model", params.data(), params.size(),
                  device == model::Device::kCuda ? MemoryKind::kDevice : MemoryKind::kHost);

  int first_epoch = 0;
  long step = 0;
  if (o.resume) {
    const auto path = checkpoint_path(o.checkpoint_dir, rank);
    auto c = load_checkpoint(path);
    if (c.model != o.model || c.parameters.size() != params.size() || c.world_size != world || c.rank != rank) {
      throw CheckpointError("checkpoint " + path + " is of rank " + std::to_string(c.rank) + " of " +
                            std::to_string(c.world_size) + ", model " + c.model + " (" +
                            std::to_string(c.parameters.size()) + " parameters); this run is rank " +
                            std::to_string(rank) + " of " + std::to_string(world) + ", model " + o.model + " (" +
                            std::to_string(params.size()) + " parameters)");
    }
    // Ranks that resume from different epochs would gossip out of step. The
    // variance over ranks is the same number on every rank, so either all
    // of them refuse or none does.
    const double mean = peer.average(static_cast<double>(c.epoch));
    const double mean_square = peer.average(static_cast<double>(c.epoch) * c.epoch);
    if (mean_square - mean * mean > 1e-9) {
      throw CheckpointError("checkpoint " + path + " is after epoch " + std::to_string(c.epoch) +
                            ", but other ranks' checkpoints are from other epochs");
    }
    write_parameters(*model, c.parameters);
    if (!c.momentum.empty()) write_device_vector(device, optimizer.momentum(), c.momentum);
    first_epoch = c.epoch;
    step = c.step;
    peer_log().info("resumed from {} after epoch {} (step {})", path, c.epoch, c.step);
  }

  metrics.write({{"event", "start"}, {"rank", rank}, {"world_size", world}, {"model", o.model},
                 {"schedule", o.peer.schedule},
                 {"parameters", params.size()}, {"algorithm", o.peer.algorithm},
                 {"compressor", o.peer.compressor}, {"topology", o.peer.topology}, {"period", o.peer.period},
                 {"partition", data::describe(partition_spec)}, {"shard_examples", shard_examples},
                 {"steps_per_epoch", steps_per_epoch}, {"epochs", o.epochs}, {"batch", o.batch}});

  data::Batch batch, eval_scratch;
  double compute_seconds = 0;
  // Training time = time - setup - evaluation: the setup (data, group,
  // resume) and the test-set passes that draw the accuracy curve are the
  // measurement's cost, not training's; a time-to-accuracy comparison
  // between systems that evaluate differently subtracts them.
  const double setup_seconds = seconds_since(start);
  double eval_seconds = 0;
  auto timed_eval = [&] {
    const auto eval_start = Clock::now();
    auto accuracy = evaluate_range(*model, data.test, 0, data.test.size(), model_spec.max_batch, eval_scratch);
    eval_seconds += seconds_since(eval_start);
    return accuracy;
  };
  auto times = [&] {
    const double now = seconds_since(start);
    return nlohmann::json{{"time", now}, {"eval_seconds", eval_seconds},
                          {"train_seconds", now - setup_seconds - eval_seconds}};
  };
  auto write_timed = [&](nlohmann::json fields) {
    fields.update(times());
    metrics.write(fields);
  };
  int batcher_pass = 0;
  batcher.start_epoch(batcher_pass);
  Accuracy local_test;
  for (int epoch = first_epoch; epoch < o.epochs; ++epoch) {
    double loss_sum = 0;
    std::int64_t correct = 0, seen = 0;
    for (long s = 0; s < steps_per_epoch; ++s, ++step) {
      if (!batcher.next(batch)) {
        batcher.start_epoch(++batcher_pass);
        batcher.next(batch);
      }
      const auto compute_start = Clock::now();
      const auto r = model->train_batch(batch.x.data(), batch.y.data(), batch.size);
      optimizer.step(model->parameters(), model->gradients(), model::learning_rate_at(schedule, step));
      if (o.extra_compute_ms > 0) {
        // A GPU peer's step keeps its CPU free: sleep, do not spin.
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.extra_compute_ms));
      }
      compute_seconds += seconds_since(compute_start);
      if (!std::isfinite(r.loss)) {
        throw std::runtime_error("the loss is " + std::to_string(r.loss) + " at step " + std::to_string(step + 1) +
                                 ": training diverged (lower --lr" +
                                 (o.peer.algorithm == "choco" ? std::string(" or --gamma") : std::string()) + ")");
      }
      peer.step();
      loss_sum += r.loss * batch.size;
      correct += r.correct;
      seen += batch.size;
      // Extra evaluations inside the epoch, for time-to-accuracy curves.
      if (s + 1 < steps_per_epoch && is_evaluation_step(s + 1, steps_per_epoch, o.evals_per_epoch)) {
        const auto mid = timed_eval();
        const auto stats = peer.stats();
        write_timed({{"event", "eval"}, {"epoch", epoch + 1}, {"step", step + 1},
                    {"test_accuracy", mid.fraction()}, {"test_loss", mid.mean_loss()},
                    {"bytes_sent", stats.bytes_sent}, {"period", stats.period}, {"ratio", stats.ratio}});
      }
      if ((s + 1) % o.log_every == 0 || s + 1 == steps_per_epoch) {
        const auto stats = peer.stats();
        write_timed({{"event", "step"}, {"step", step + 1}, {"epoch", epoch + 1},
                    {"loss", loss_sum / seen}, {"train_accuracy", static_cast<double>(correct) / seen},
                    {"lr", model::learning_rate_at(schedule, step)}, {"bytes_sent", stats.bytes_sent},
                    {"bytes_received", stats.bytes_received}, {"compute_seconds", compute_seconds},
                    {"communication_wait_seconds", stats.wait_seconds}, {"period", stats.period},
                    {"ratio", stats.ratio}});
        if (o.events) {
          events::emit_event(events::to_json(events::ProgressEvent{
              rank, epoch + 1, o.epochs, s + 1, steps_per_epoch, loss_sum / seen,
              static_cast<double>(correct) / seen, stats.bytes_sent}));
        }
      }
    }
    // The round in flight belongs to this epoch's model.
    peer.flush();
    local_test = timed_eval();
    const double consensus = peer.consensus_distance();
    const auto stats = peer.stats();
    write_timed({{"event", "eval"}, {"epoch", epoch + 1}, {"step", step},
                {"test_accuracy", local_test.fraction()}, {"test_loss", local_test.mean_loss()},
                {"bytes_sent", stats.bytes_sent}, {"period", stats.period}, {"ratio", stats.ratio}});
    write_timed({{"event", "epoch"}, {"epoch", epoch + 1}, {"step", step},
                {"loss", loss_sum / seen}, {"train_accuracy", static_cast<double>(correct) / seen},
                {"test_loss", local_test.mean_loss()}, {"test_accuracy", local_test.fraction()},
                {"consensus_distance", consensus}, {"bytes_sent", stats.bytes_sent},
                {"bytes_received", stats.bytes_received}, {"links", links_json(stats)},
                {"compute_seconds", compute_seconds}, {"communication_wait_seconds", stats.wait_seconds},
                {"communication_thread_seconds", stats.comm_seconds}, {"rounds", stats.rounds}});
    peer_log().info("epoch {}/{}: loss {:.4f}, train accuracy {:.4f}, test accuracy {:.4f}, consensus distance {:.3g}",
                    epoch + 1, o.epochs, loss_sum / seen, static_cast<double>(correct) / seen, local_test.fraction(),
                    consensus);
    if (!o.checkpoint_dir.empty()) {
      Checkpoint c;
      c.rank = rank;
      c.world_size = world;
      c.model = o.model;
      c.epoch = epoch + 1;
      c.step = step;
      c.parameters = read_parameters(*model);
      c.momentum = read_device_vector(device, optimizer.momentum());
      save_checkpoint(checkpoint_path(o.checkpoint_dir, rank), c);
    }
  }
  peer.finish();
  if (first_epoch >= o.epochs || local_test.count == 0) {
    local_test = evaluate_range(*model, data.test, 0, data.test.size(), model_spec.max_batch, eval_scratch);
  }

  std::vector<float> averaged(peer.parameter_count());
  peer.averaged_model(averaged.data());
  const auto average_test = evaluate_shared(peer, *model, averaged, data.test, model_spec.max_batch, eval_scratch);

  const auto stats = peer.stats();
  TrainSummary summary;
  summary.test_accuracy = local_test.fraction();
  summary.average_model_test_accuracy = average_test.fraction();
  summary.bytes_sent = stats.bytes_sent;
  summary.bytes_received = stats.bytes_received;
  summary.wall_seconds = seconds_since(start);
  summary.peak_rss_bytes = peak_rss_bytes();
  const std::uint64_t dataset_bytes = data.train.pixels.size() + data.train.labels.size() +
                                      data.test.pixels.size() + data.test.labels.size();
  nlohmann::json result = events::to_json(events::ResultEvent{
      rank, summary.test_accuracy, summary.average_model_test_accuracy, summary.bytes_sent, summary.bytes_received,
      summary.wall_seconds});
  result["host"] = peer.host(rank);
  result["algorithm"] = o.peer.algorithm;
  result["compressor"] = o.peer.compressor;
  result["topology"] = o.peer.topology;
  result["model"] = o.model;
  result["parameters"] = params.size();
  result["peak_rss_bytes"] = summary.peak_rss_bytes;
  result["model_buffer_bytes"] = model->buffer_bytes();
  result["dataset_bytes"] = dataset_bytes;
  result["compute_seconds"] = compute_seconds;
  result["setup_seconds"] = setup_seconds;
  result["eval_seconds"] = eval_seconds;
  result["communication_wait_seconds"] = stats.wait_seconds;
  result["steps"] = step;
  nlohmann::json record = result;
  record["event"] = "summary";
  record["links"] = links_json(stats);
  metrics.write(record);
  if (o.events) events::emit_event(result);
  return summary;
}

}  // namespace murmur::train
