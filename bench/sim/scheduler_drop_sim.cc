// The scheduler's link-drop experiment (bench/peer/scheduler_drop.py) on the
// simulator, with real models: 8 peers train the MLP on Fashion-MNIST, one
// per node on an exponential graph of 10 Gbit/s links, with choco; link
// 0 <-> 1 drops to 100 Mbit/s and recovers. Each step costs --compute-ms of
// virtual time (an accelerator's step), so the clock holds the links and
// the schedule only, none of the host's CPU contention. Runs the same grid
// of fixed (ratio, H) settings as the real experiment and the adaptive
// schedule, and prints the virtual time at which rank 0's model first
// reaches the target. Deterministic: one run per setting and seed.
//
//   build/bench/sim/scheduler_drop_sim [--model mlp] [--compute-ms 61] [--epochs 3]
//       [--drop-s 2.5 --recover-s 14.5] [--seeds 1,2,3] [--curves curves.csv]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/log.h"
#include "gossip/algorithm/gossip_flags.h"
#include "gossip/schedule/errors.h"
#include "gossip/schedule/schedule_file.h"
#include "peer/data/fashion_mnist.h"
#include "peer/model/blas_threads.h"
#include "sim/runtime/sim_training.h"

namespace {

struct Setting {
  std::string label;
  std::string compressor;
  int period = 1;
  bool adaptive = false;
};

const std::vector<Setting> kGrid = {
    {"fixed ratio 1, H 1", "topk:1", 1, false},       {"fixed ratio 0.1, H 1", "topk:0.1", 1, false},
    {"fixed ratio 0.01, H 1", "topk:0.01", 1, false}, {"fixed ratio 0.1, H 4", "topk:0.1", 4, false},
    {"fixed ratio 1, H 4", "topk:1", 4, false},       {"adaptive", "topk:1", 1, true},
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The scheduler's link-drop experiment with real models on murmur-sim's virtual clock"};
  murmur::sim::runtime::TrainingSetup base;
  base.training.epochs = 3;
  base.training.evals_per_epoch = 16;
  int peers = 8;
  double compute_ms = 61, fast_gbit = 10, slow_mbit = 100, latency_us = 25, drop_s = 2.5, recover_s = 14.5,
         target = 0.85;
  std::string seeds = "1", only, curves, decisions, data_dir, adaptive_schedule = "adaptive";
  app.add_option("--data-dir", data_dir, "Fashion-MNIST directory (default: Debian's dataset-fashion-mnist)");
  app.add_option("--model", base.training.model, "mlp, mlp:H1,H2,..., cnn or logreg")->capture_default_str();
  app.add_option("--partition", base.training.partition, "iid or dirichlet:<alpha>")->capture_default_str();
  app.add_option("--peers", peers, "simulated peers (one per node)")->capture_default_str()->check(CLI::Range(2, 1024));
  app.add_option("--epochs", base.training.epochs)->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--evals-per-epoch", base.training.evals_per_epoch)->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--compute-ms", compute_ms, "virtual compute per step (the real job: 60 ms slept + ~1 ms)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--fast-gbit", fast_gbit, "every link's bandwidth, Gbit/s")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--slow-mbit", slow_mbit, "link 0-1 during the drop, Mbit/s")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--latency-us", latency_us, "one-way latency of every link")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--drop-s", drop_s, "virtual time the drop starts")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--recover-s", recover_s, "virtual time the link recovers")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  murmur::gossip::add_gossip_flags(app, base.gossip.options, murmur::gossip::kGammaFlag, "Options");
  app.add_option("--target", target, "test accuracy of rank 0's model")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seeds", seeds, "comma-separated seeds (model, shuffling, partition); one run per seed and setting")
      ->capture_default_str();
  app.add_option("--adaptive-schedule", adaptive_schedule,
                 "the adaptive row's schedule, e.g. adaptive:suspect_run=2 (docs/scheduler.md, Knobs)")
      ->capture_default_str();
  app.add_option("--only", only, "settings separated by ';', e.g. 'fixed ratio 0.1, H 1;adaptive'");
  app.add_option("--curves", curves, "write every evaluation as CSV (setting,seed,step,time_s,test_accuracy)");
  app.add_option("--decisions", decisions,
                 "write the adaptive runs' scheduler decisions as JSON lines (the record plus setting, seed, rank, "
                 "time_s)");
  CLI11_PARSE(app, argc, argv);
  if (recover_s <= drop_s) {
    std::fprintf(stderr, "scheduler_drop_sim: --recover-s %g must be after --drop-s %g\n", recover_s, drop_s);
    return 2;
  }
  std::vector<Setting> grid;
  for (const auto& label : split(only, ';')) {
    const auto it = std::find_if(kGrid.begin(), kGrid.end(), [&](const Setting& s) { return s.label == label; });
    if (it == kGrid.end()) {
      std::fprintf(stderr, "scheduler_drop_sim: --only: no setting '%s'\n", label.c_str());
      return 2;
    }
    grid.push_back(*it);
  }
  if (grid.empty()) grid = kGrid;
  std::vector<std::uint64_t> seed_list;
  try {
    for (const auto& s : split(seeds, ',')) seed_list.push_back(std::stoull(s));
  } catch (const std::exception&) {
    std::fprintf(stderr, "scheduler_drop_sim: --seeds '%s' is not a list of integers\n", seeds.c_str());
    return 2;
  }
  if (seed_list.empty()) {
    std::fprintf(stderr, "scheduler_drop_sim: --seeds is empty\n");
    return 2;
  }

  try {
    // Checked before the data is read: a bad spec fails at once.
    murmur::gossip::schedule::parse_schedule_flag(adaptive_schedule);
    murmur::peer::model::set_blas_threads(murmur::peer::model::blas_threads_from_environment());
    murmur::sched_log().set_level(spdlog::level::warn);
    const auto data = murmur::peer::data::load_fashion_mnist(
        data_dir.empty() ? murmur::peer::data::default_fashion_mnist_dir() : data_dir);
    base.compute_s = compute_ms / 1000;
    auto& cluster = base.gossip.cluster;
    cluster.gpus = peers;
    cluster.gpus_per_node = 1;
    cluster.network = "custom";
    cluster.inter_node = {latency_us * 1e-6, fast_gbit * 1e9 / 8};
    cluster.intra_node = cluster.inter_node;
    cluster.episodes.push_back({0, 1, drop_s, recover_s, {latency_us * 1e-6, slow_mbit * 1e6 / 8}});
    base.gossip.options.algorithm = "choco";
    base.gossip.options.topology = "exponential";

    std::ofstream curve_file;
    if (!curves.empty()) {
      curve_file.open(curves);
      if (!curve_file) throw std::runtime_error("--curves " + curves + ": cannot open for writing");
      curve_file << "setting,seed,step,time_s,test_accuracy\n";
    }
    std::ofstream decision_file;
    if (!decisions.empty()) {
      decision_file.open(decisions);
      if (!decision_file) throw std::runtime_error("--decisions " + decisions + ": cannot open for writing");
    }
    std::printf(
        "%d simulated peers (%s shards), exponential graph, choco, %s, %g ms of compute per step; link 0<->1 "
        "%g Gbit/s -> %g Mbit/s at %g s, back at %g s (virtual); virtual time for rank 0's model to reach "
        "%g%% test accuracy\n\n",
        peers, base.training.partition.c_str(), base.training.model.c_str(), compute_ms, fast_gbit, slow_mbit, drop_s,
        recover_s, target * 100);
    std::printf(
        "| setting | seed | virtual s to target | at step | final acc. | virtual s total | sim MB sent | host s |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& setting : grid) {
      for (const auto seed : seed_list) {
        murmur::sim::runtime::TrainingSetup t = base;
        t.training.seed = seed;
        t.gossip.options.seed = seed;
        t.gossip.options.compressor = setting.compressor;
        t.gossip.options.period = setting.period;
        if (setting.adaptive) t.gossip.options.schedule = adaptive_schedule;
        if (decision_file) {
          t.gossip.on_decision = [&, seed](int rank, double time_s, const nlohmann::json& decision) {
            auto record = decision;
            record["setting"] = setting.label;
            record["seed"] = seed;
            record["rank"] = rank;
            record["time_s"] = time_s;
            decision_file << record.dump() << '\n';
          };
        }
        const auto start = std::chrono::steady_clock::now();
        const auto r = murmur::sim::runtime::run_training(t, data);
        const double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const auto reached = r.first_at(target);
        char at[64] = "not reached | -";
        if (reached) std::snprintf(at, sizeof at, "%.2f | %ld", reached->time_s, reached->step);
        std::printf("| %s | %llu | %s | %.2f%% | %.2f | %.1f | %.1f |\n", setting.label.c_str(),
                    static_cast<unsigned long long>(seed), at, r.evals.back().test_accuracy * 100,
                    r.gossip.virtual_seconds, r.gossip.bytes_total / 1e6, host_s);
        std::fflush(stdout);
        if (curve_file)
          for (const auto& e : r.evals)
            curve_file << '"' << setting.label << "\"," << seed << ',' << e.step << ',' << e.time_s << ','
                       << e.test_accuracy << '\n';
      }
    }
  } catch (const murmur::gossip::schedule::ScheduleError& e) {
    std::fprintf(stderr, "scheduler_drop_sim: --adaptive-schedule: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scheduler_drop_sim: %s\n", e.what());
    return 1;
  }
  return 0;
}
