// Throughput of each compressor (encode and decode, single thread) in GB/s of
// fp32 input, next to memcpy of the same bytes measured in the same run.
// Each benchmark checks the result it timed (SkipWithError on a mismatch).
//
//   compress_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Counters: GBps (input bytes / time), wire_B_per_elem (bytes on the wire per
// element). Ratios to memcpy: docs/compressors.md.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gossip/compress/compressor.h"

namespace mg = murmur::gossip;

namespace {

const std::vector<float>& input(std::size_t n) {
  static std::map<std::size_t, std::vector<float>> cache;
  auto& v = cache[n];
  if (v.empty()) {
    std::mt19937 gen(1234);
    std::normal_distribution<float> d(0.0f, 1.0f);
    v.resize(n);
    for (auto& x : v) x = d(gen);
  }
  return v;
}

void set_rate(benchmark::State& state, std::size_t n) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * std::int64_t(n) * 4);
  state.counters["GBps"] = benchmark::Counter(double(n) * 4 / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Memcpy(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  const auto& x = input(n);
  std::vector<float> y(n);
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), n * 4);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  if (y != x) state.SkipWithError("memcpy result differs");
  set_rate(state, n);
}

// Empty when y is what spec should decode x to; else what is wrong.
std::string check(const std::string& spec, const std::vector<float>& x, const std::vector<float>& y) {
  const std::size_t n = x.size();
  auto fail = [&](std::size_t i) {
    return spec + ": element " + std::to_string(i) + " decoded to " + std::to_string(y[i]) + " from " +
           std::to_string(x[i]);
  };
  if (spec == "identity") {
    for (std::size_t i = 0; i < n; ++i)
      if (y[i] != x[i]) return fail(i);
  } else if (spec == "fp16" || spec == "bf16") {
    const float rel = spec == "fp16" ? 0x1p-11f : 0x1p-8f;
    for (std::size_t i = 0; i < n; ++i)
      if (std::fabs(y[i] - x[i]) > std::fabs(x[i]) * rel + 0x1p-24f) return fail(i);
  } else if (spec.rfind("qsgd:", 0) == 0) {
    double sq = 0;
    for (float v : x) sq += double(v) * v;
    const float step = float(std::sqrt(sq) / std::stod(spec.substr(5))) * 1.001f;
    for (std::size_t i = 0; i < n; ++i)
      if (std::fabs(y[i] - x[i]) > step) return fail(i);
  } else if (spec == "sign") {
    for (std::size_t i = 0; i < n; ++i)
      if (std::signbit(y[i]) != std::signbit(x[i]) || std::fabs(y[i]) != std::fabs(y[0])) return fail(i);
  } else if (spec.rfind("topk:", 0) == 0 || spec.rfind("randk:", 0) == 0) {
    const double ratio = std::stod(spec.substr(spec.find(':') + 1));
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (y[i] == 0) continue;
      if (y[i] != x[i]) return fail(i);
      ++kept;
    }
    if (kept != static_cast<std::size_t>(std::ceil(ratio * n - 1e-9)))
      return spec + ": kept " + std::to_string(kept) + " entries";
  } else {  // powersgd: a projection, so the error is no larger than the input
    double ex = 0, ey = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ex += double(x[i]) * x[i];
      ey += double(y[i] - x[i]) * (y[i] - x[i]);
    }
    if (!(ey <= ex * 1.0001)) return spec + ": low-rank error larger than the input";
  }
  return {};
}

void BM_Encode(benchmark::State& state, std::string spec) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  const auto& x = input(n);
  auto c = mg::make_compressor(spec, mg::Feedback::kNone);
  std::vector<std::byte> msg(c->max_encoded_bytes(n));
  std::size_t bytes = 0;
  mg::EncodeParams p;
  p.seed = 7;
  for (auto _ : state) {
    bytes = c->encode(x, msg, p);
    benchmark::DoNotOptimize(msg.data());
    benchmark::ClobberMemory();
  }
  std::vector<float> y(n);
  c->decode(std::span(msg).first(bytes), y);
  if (auto err = check(spec, x, y); !err.empty()) state.SkipWithError(err.c_str());
  set_rate(state, n);
  state.counters["wire_B_per_elem"] = double(bytes) / double(n);
}

void BM_Decode(benchmark::State& state, std::string spec) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  const auto& x = input(n);
  auto c = mg::make_compressor(spec, mg::Feedback::kNone);
  std::vector<std::byte> msg(c->max_encoded_bytes(n));
  const std::size_t bytes = c->encode(x, msg);
  const auto m = std::span(msg).first(bytes);
  std::vector<float> y(n);
  for (auto _ : state) {
    c->decode(m, y);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  if (auto err = check(spec, x, y); !err.empty()) state.SkipWithError(err.c_str());
  set_rate(state, n);
  state.counters["wire_B_per_elem"] = double(bytes) / double(n);
}

constexpr std::int64_t kSizes[] = {1 << 20, 1 << 26};

int register_all() {
  for (auto n : kSizes) benchmark::RegisterBenchmark("memcpy", BM_Memcpy)->Arg(n)->Unit(benchmark::kMillisecond);
  for (const char* spec : {"identity", "fp16", "bf16", "qsgd:16", "sign", "topk:0.01", "randk:0.01", "powersgd:4",
                           // the scheduler's rungs: what less compression costs the CPU
                           "topk:1", "topk:0.5", "topk:0.25", "topk:0.1"})
    for (auto n : kSizes) {
      benchmark::RegisterBenchmark((std::string("encode/") + spec).c_str(), BM_Encode, std::string(spec))
          ->Arg(n)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark((std::string("decode/") + spec).c_str(), BM_Decode, std::string(spec))
          ->Arg(n)
          ->Unit(benchmark::kMillisecond);
    }
  return 0;
}
const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
