// What one trace record costs, off and on: the per-event figure that,
// times the events of a step (bench/trace/overhead.sh counts them in a real
// trace), bounds the timeline's share of a step.
//
//   build/bench/trace/trace_record_cost [--events 2000000] [--repeats 9]
//
// Prints the median over repeats of ns per Scope (a span with two clock
// reads) with no session, and with one recording, on one thread and on two
// threads at once (each records into its own buffer).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/trace.h"

namespace {

using Clock = std::chrono::steady_clock;

double ns_per_scope(long events, int threads) {
  auto body = [events] {
    for (long i = 0; i < events; ++i) murmur::trace::Scope span(murmur::trace::Category::kCompute, "bench");
  };
  const auto start = Clock::now();
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back(body);
  body();
  for (auto& t : others) t.join();
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(events);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  long events = 2'000'000;
  int repeats = 9;
  CLI::App app{"ns per trace record, off and on"};
  app.add_option("--events", events, "records per repetition and thread")->check(CLI::Range(1000L, 100'000'000L));
  app.add_option("--repeats", repeats, "repetitions (the median is printed)")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  const auto path = std::filesystem::temp_directory_path() / "murmur-trace-record-cost.json";
  for (int threads : {1, 2}) {
    std::vector<double> off, on;
    for (int r = 0; r < repeats; ++r) {
      off.push_back(ns_per_scope(events, threads));
      {
        murmur::trace::Session session(path.string(), {.max_events = static_cast<std::size_t>(events) * threads});
        on.push_back(ns_per_scope(events, threads));
        // The file is not timed: it is written once, at the end of a run.
      }
    }
    std::printf("threads %d: off %.2f ns per span, on %.2f ns per span (median of %d x %ld)\n", threads, median(off),
                median(on), repeats, events);
  }
  std::filesystem::remove(path);
  return 0;
}
