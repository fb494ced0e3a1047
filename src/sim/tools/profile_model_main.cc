// murmur-sim-profile: measures one of murmur's trainer models on this
// machine, alone (one process, one peer, no communication), and writes a
// murmur-sim model profile (docs/sim-files.md) with each parameter layer's
// measured forward and backward time, so that murmur-sim can predict
// murmur's own runs from single-peer measurements only (docs/sim.md,
// "murmur-sim against murmur's own runs").
//
//   murmur-sim-profile --model cnn --batch 64 --steps 30 --out cnn.profile
//
// Per step, on a batch of random images (the compute of these models does
// not depend on the values):
//   - forward: the time of Model::evaluate on the batch (forward only),
//     split over the layers in proportion to their backward times (the
//     model has no per-layer forward hook; a layer's forward is about half
//     its backward for dense and conv layers alike);
//   - backward: Model::train_batch with a gradient hook that stamps each
//     layer as it is handed over; a layer's backward is the time since the
//     previous stamp (the first: since train_batch began, less the
//     forward), so the loss and the ops without parameters go to the layer
//     that waits for them, as docs/sim-files.md asks;
//   - the optimizer step (momentum SGD), added to the first layer's
//     forward: it runs between the last all-reduce and the next forward,
//     where nothing overlaps it.
// Every time is the median over --steps steps after --warmup.
// --step-times FILE also writes each measured step's training time
// (train_batch and the optimizer, in seconds, one a line): run several at
// once and the spread shows what sharing the host's cores does to a step
// (bench/experiments/sim_vs_runtime.py).
//
// Exit status: 0, 2 for a usage error (the flag is named). Single-threaded.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "peer/model/blas_threads.h"
#include "peer/model/model.h"
#include "peer/model/optimizer.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace model = murmur::peer::model;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Options {
  std::string model = "cnn";
  int batch = 64;
  int steps = 30;
  int warmup = 3;
  int blas_threads = 1;
  std::uint64_t seed = 1;
  std::string out;
  std::string step_times;
};

// Per-step samples: forward, optimizer, and each layer's backward.
struct Samples {
  std::vector<double> forward, optimizer, step;
  std::vector<std::vector<double>> backward;  // [layer][step]
};

Samples measure(model::Model& m, const Options& o) {
  const model::ModelSpec spec = model::parse_model_spec(o.model, model::Device::kCpu);
  const std::size_t features = static_cast<std::size_t>(spec.input_channels) * spec.input_rows * spec.input_cols;
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<float> pixel(0.0F, 1.0F);
  std::vector<float> x(features * static_cast<std::size_t>(o.batch));
  for (float& v : x) v = pixel(rng);
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(o.batch));
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % static_cast<unsigned>(spec.classes));

  const std::size_t layers = m.gradient_layer_sizes().size();
  Samples s;
  s.backward.resize(layers);
  std::vector<Clock::time_point> handed(layers);
  m.set_gradient_hook([&](std::size_t layer) { handed[layer] = Clock::now(); });
  model::SgdOptimizer optimizer(m.parameter_count(), model::Device::kCpu, model::SgdOptions{});
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    auto t = Clock::now();
    m.evaluate(x.data(), labels.data(), o.batch);
    const double forward = seconds_since(t);
    const auto began = Clock::now();
    m.train_batch(x.data(), labels.data(), o.batch);
    t = Clock::now();
    optimizer.step(m.parameters(), m.gradients(), 0.01);
    const double optimizer_s = seconds_since(t);
    if (step < o.warmup) continue;
    s.forward.push_back(forward);
    s.optimizer.push_back(optimizer_s);
    s.step.push_back(seconds_since(began));
    auto previous = began;
    for (std::size_t l = layers; l-- > 0;) {
      double b = std::chrono::duration<double>(handed[l] - previous).count();
      if (l + 1 == layers) b = std::max(b - forward, 1e-9);
      s.backward[l].push_back(std::max(b, 1e-9));
      previous = handed[l];
    }
  }
  return s;
}

void write_profile(std::ostream& out, const Options& o, const std::vector<std::size_t>& sizes, const Samples& s) {
  std::vector<double> backward;
  double backward_total = 0;
  for (const auto& b : s.backward) backward_total += backward.emplace_back(median(b));
  const double forward_total = median(s.forward);
  const double optimizer_s = median(s.optimizer);
  out << "# murmur-sim-profile --model " << o.model << " --batch " << o.batch << " --steps " << o.steps
      << " --blas-threads " << o.blas_threads << "\n"
      << "# one process, no communication; medians over " << o.steps << " steps: forward " << forward_total * 1e3
      << " ms, backward " << backward_total * 1e3 << " ms, optimizer " << optimizer_s * 1e3
      << " ms (in the first layer's forward)\n"
      << "model " << o.model << "\n"
      << "batch " << o.batch << "\n";
  for (std::size_t l = 0; l < sizes.size(); ++l) {
    double forward = forward_total * backward[l] / backward_total;
    if (l == 0) forward += optimizer_s;
    out << "layer layer" << l << " params=" << sizes[l] << " forward-ms=" << forward * 1e3
        << " backward-ms=" << backward[l] * 1e3 << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Measures a murmur trainer model alone on this machine and writes a murmur-sim profile "
      "(docs/sim-files.md) with per-layer forward and backward times.",
      "murmur-sim-profile"};
  Options o;
  app.add_option("--model", o.model, "murmur-peer's --model (mlp, mlp:H1,H2,..., cnn, logreg)")->capture_default_str();
  app.add_option("--batch", o.batch, "batch per step")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--steps", o.steps, "measured steps")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--warmup", o.warmup, "steps run before measuring")->capture_default_str()->check(CLI::Range(0, 1000));
  app.add_option("--blas-threads", o.blas_threads, "BLAS threads (murmur-peer's default in the bench: 1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--seed", o.seed, "seed of the weights and the random batch")->capture_default_str();
  app.add_option("--out", o.out, "profile file to write (default: stdout)");
  app.add_option("--step-times", o.step_times, "also write each step's training time (s), one a line, here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    model::set_blas_threads(o.blas_threads);
    model::ModelSpec spec = model::parse_model_spec(o.model, model::Device::kCpu);
    spec.max_batch = std::max(spec.max_batch, o.batch);
    const auto m = model::make_model(spec);
    m->initialize(o.seed);
    const Samples s = measure(*m, o);
    if (o.out.empty()) {
      write_profile(std::cout, o, m->gradient_layer_sizes(), s);
    } else {
      std::ofstream file(o.out);
      write_profile(file, o, m->gradient_layer_sizes(), s);
      if (!file.flush()) {
        std::cerr << "murmur-sim-profile: --out: cannot write '" << o.out << "'\n";
        return 1;
      }
    }
    if (!o.step_times.empty()) {
      std::ofstream file(o.step_times);
      for (double t : s.step) file << t << "\n";
      if (!file.flush()) {
        std::cerr << "murmur-sim-profile: --step-times: cannot write '" << o.step_times << "'\n";
        return 1;
      }
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "murmur-sim-profile: --model: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
