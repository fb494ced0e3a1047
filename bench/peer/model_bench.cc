// Training throughput of the models: train_batch (forward + backward) at
// batch 64 on one BLAS thread, as a peer runs it, in images per second
// (items_per_second), with the model's parameter count and buffer bytes as
// counters. Random inputs; every timed step's loss is checked to be finite.
// Where a CUDA device is usable, the same on it (the */cuda cases; batch 64
// and 256, the host-to-device copy of the batch included).
//
//   model_bench [--benchmark_filter=cnn] [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer/model/blas_threads.h"
#include "peer/model/model.h"
#include "peer/model/optimizer.h"

namespace mm = murmur::peer::model;

namespace {

constexpr int kBatch = 64;

struct Batch {
  std::vector<float> x;
  std::vector<std::uint8_t> labels;
};

Batch random_batch(int batch) {
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Batch b{std::vector<float>(std::size_t(batch) * 784), std::vector<std::uint8_t>(batch)};
  for (auto& v : b.x) v = normal(gen);
  for (int i = 0; i < batch; ++i) b.labels[i] = static_cast<std::uint8_t>(gen() % 10);
  return b;
}

void report(benchmark::State& state, const mm::Model& model) {
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["parameters"] = static_cast<double>(model.parameter_count());
  state.counters["buffer_bytes"] = static_cast<double>(model.buffer_bytes());
}

void train(benchmark::State& state, const std::string& name, mm::Device device, int batch) {
  mm::ModelSpec spec = mm::parse_model_spec(name, device);
  spec.max_batch = batch;
  auto model = mm::make_model(spec);
  model->initialize(1);
  const Batch b = random_batch(batch);
  for (auto _ : state) {
    const mm::StepResult r = model->train_batch(b.x.data(), b.labels.data(), batch);
    if (!std::isfinite(r.loss)) {
      state.SkipWithError("loss is not finite");
      break;
    }
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["parameters"] = static_cast<double>(model->parameter_count());
  state.counters["buffer_bytes"] = static_cast<double>(model->buffer_bytes());
}

void BM_TrainBatch(benchmark::State& state, const std::string& name) {
  mm::set_blas_threads(1);
  train(state, name, mm::Device::kCpu, kBatch);
}

bool cuda_usable() {
  try {
    mm::make_model(mm::parse_model_spec("logreg", mm::Device::kCuda));
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

void BM_Evaluate(benchmark::State& state, const std::string& name) {
  mm::set_blas_threads(1);
  mm::ModelSpec spec = mm::parse_model_spec(name, mm::Device::kCpu);
  spec.max_batch = kBatch;
  auto model = mm::make_model(spec);
  model->initialize(1);
  const Batch b = random_batch(kBatch);
  for (auto _ : state) {
    const mm::EvalResult r = model->evaluate(b.x.data(), b.labels.data(), kBatch);
    if (!std::isfinite(r.loss_sum) || r.count != kBatch) {
      state.SkipWithError("bad evaluation result");
      break;
    }
    benchmark::DoNotOptimize(r);
  }
  report(state, *model);
}

// One optimizer step over the model's parameters: what a training step adds
// to train_batch (items = images of the batch it follows, for comparison).
void BM_TrainStepWithSgd(benchmark::State& state, const std::string& name) {
  mm::set_blas_threads(1);
  mm::ModelSpec spec = mm::parse_model_spec(name, mm::Device::kCpu);
  spec.max_batch = kBatch;
  auto model = mm::make_model(spec);
  model->initialize(1);
  mm::SgdOptimizer opt(model->parameter_count(), mm::Device::kCpu, {});
  const Batch b = random_batch(kBatch);
  for (auto _ : state) {
    const mm::StepResult r = model->train_batch(b.x.data(), b.labels.data(), kBatch);
    opt.step(model->parameters(), model->gradients(), 0.01);
    if (!std::isfinite(r.loss)) {
      state.SkipWithError("loss is not finite");
      break;
    }
  }
  report(state, *model);
}

BENCHMARK_CAPTURE(BM_TrainBatch, logreg, std::string("logreg"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TrainBatch, mlp, std::string("mlp"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TrainBatch, cnn, std::string("cnn"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TrainStepWithSgd, mlp, std::string("mlp"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TrainStepWithSgd, cnn, std::string("cnn"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Evaluate, mlp, std::string("mlp"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Evaluate, cnn, std::string("cnn"))->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (cuda_usable())
    for (const char* name : {"mlp", "cnn"})
      for (int batch : {kBatch, 256})
        benchmark::RegisterBenchmark((std::string("BM_TrainBatch/") + name + "/cuda/" + std::to_string(batch)).c_str(),
                                     [name, batch](benchmark::State& s) { train(s, name, mm::Device::kCuda, batch); })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
