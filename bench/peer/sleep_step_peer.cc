// One rank of bench/python/overhead.py's --sleep-ms pair: murmur::Peer (the
// public API only) gossiping one tensor of --floats values, with a sleep of
// --compute-ms per step where a trainer would compute. Its Python twin,
// bench/python/sleep_step_rank.py, does the same through murmur.torch's
// GossipOptimizer; with the compute a sleep on both sides, the neighbours'
// messages come equally late in both jobs, and the rounds' time compares
// the two ways of driving the Peer and nothing else.
//
//   murmur-run -np 8 -- sleep_step_peer --compute-ms 3 --algorithm choco --compressor topk:0.01
//
// Prints one JSON line per rank: steps, the rounds' wall and CPU time, the
// time step() blocked (PeerStats).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "murmur/peer.h"

int main(int argc, char** argv) {
  CLI::App app{"one rank of bench/python/overhead.py --sleep-ms"};
  // The PyTorch example's MLP, 784-256-128-10: 235,146 parameters.
  std::size_t floats = 235'146;
  std::string algorithm = "choco", compressor = "topk:0.01", topology = "exponential";
  int steps = 600;
  double compute_ms = 3;
  app.add_option("--floats", floats, "the model's size in float32 values")->check(CLI::PositiveNumber);
  app.add_option("--algorithm", algorithm);
  app.add_option("--compressor", compressor);
  app.add_option("--topology", topology);
  app.add_option("--steps", steps)->check(CLI::PositiveNumber);
  app.add_option("--compute-ms", compute_ms, "sleep this long per step, where a trainer computes")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    murmur::PeerConfig config;  // rank, size and rendezvous from murmur-run's variables
    config.algorithm = algorithm;
    config.compressor = compressor;
    config.topology = topology;
    murmur::Peer peer(config);
    // Values that differ by rank and position, as models do: top-k selects
    // from a spread, not from ties.
    std::vector<float> model(floats);
    for (std::size_t i = 0; i < floats; ++i) model[i] = static_cast<float>(peer.rank()) + (i % 1009) * 1e-3f;
    peer.add_tensor("model", model.data(), model.size());
    const auto compute = std::chrono::microseconds(static_cast<long>(compute_ms * 1000));
    for (int s = 0; s < steps; ++s) {
      std::this_thread::sleep_for(compute);
      peer.step();
    }
    peer.flush();
    const auto stats = peer.stats();
    std::printf(
        "{\"rank\": %d, \"steps\": %llu, \"comm_seconds\": %.6f, \"comm_cpu_seconds\": %.6f, \"wait_seconds\": "
        "%.6f}\n",
        peer.rank(), static_cast<unsigned long long>(stats.steps), stats.comm_seconds, stats.comm_cpu_seconds,
        stats.wait_seconds);
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sleep_step_peer: %s\n", e.what());
    return 1;
  }
}
