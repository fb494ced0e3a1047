// One rank of a model-memory job (bench/peer/model_memory.py): registers
// one tensor of --floats values with murmur::Peer (the public API only),
// takes --steps steps of the given algorithm and compressor, and prints one
// JSON line with its peak resident memory against the tensor itself, so the
// memory an algorithm keeps per rank (copies, buffers) can be read as
// multiples of the model (docs/models.md, "Memory per algorithm"). The
// peak is read after the steps (and flush), before the collectives that
// check the result, which allocate model-sized buffers of their own
// (peak_with_collectives_mib).
//
//   murmur-run -np 3 -- model_memory_peer --floats 100000000 --algorithm choco --compressor topk:0.01
//
// Gradient-averaging methods (bsp-a2a, the -ps ones, ...) get the tensor as
// their gradient buffer too, handed over as one layer per step, as a
// trainer's backward pass would. It exits 2 if a value is not finite;
// bench/peer/model_memory.py also requires bytes sent by every rank.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "murmur/peer.h"

namespace {

// This process's resident memory now and at its peak (/proc/self/status), MiB.
struct Resident {
  double now_mib = 0;
  double peak_mib = 0;
};

Resident resident() {
  Resident r;
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    double kib = 0;
    if (key == "VmRSS:" && status >> kib) r.now_mib = kib / 1024;
    if (key == "VmHWM:" && status >> kib) r.peak_mib = kib / 1024;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"one rank of a model-memory job (bench/peer/model_memory.py)"};
  std::size_t floats = 100'000'000;
  std::string algorithm = "choco", compressor = "identity", topology = "ring", backend, provider;
  int steps = 4;
  app.add_option("--floats", floats, "the model's size in float32 values")->check(CLI::PositiveNumber);
  app.add_option("--algorithm", algorithm);
  app.add_option("--compressor", compressor);
  app.add_option("--topology", topology);
  app.add_option("--steps", steps)->check(CLI::PositiveNumber);
  app.add_option("--backend", backend, "libfabric or asio (default: murmur's)");
  app.add_option("--provider", provider, "libfabric provider: tcp, shm, ... (default: murmur's choice)");
  CLI11_PARSE(app, argc, argv);
  try {
    const Resident at_start = resident();
    std::vector<float> model(floats);
    std::vector<float> gradient;
    murmur::PeerConfig config;  // rank, size and rendezvous from murmur-run's variables
    config.algorithm = algorithm;
    config.compressor = compressor;
    config.topology = topology;
    if (!backend.empty()) config.backend = backend;
    if (!provider.empty()) config.provider = provider;
    config.timeout_s = 300;  // a step of 400 MB on two shared cores takes seconds
    murmur::Peer peer(config);
    for (std::size_t i = 0; i < floats; ++i) model[i] = static_cast<float>(peer.rank()) + (i % 1000) * 1e-3f;
    peer.add_tensor("model", model.data(), model.size());
    if (peer.averages_gradients()) {
      gradient.assign(floats, 0.0f);
      peer.set_gradients(gradient.data(), gradient.size(), {floats});
    }
    const Resident with_model = resident();
    for (int s = 0; s < steps; ++s) {
      if (peer.averages_gradients()) {
        for (std::size_t i = 0; i < floats; i += 4096) gradient[i] = static_cast<float>(peer.rank() + s);
        peer.gradient_ready(0);
        peer.average_gradients();
        for (std::size_t i = 0; i < floats; i += 4096) model[i] -= 0.01f * gradient[i];
      }
      peer.step();
    }
    peer.flush();
    // The gossip's own high-water mark, before the collectives below
    // (averaging the distance allocates model-sized buffers of its own).
    const Resident after_steps = resident();
    bool finite = true;
    for (std::size_t i = 0; i < floats && finite; i += 997) finite = std::isfinite(model[i]);
    const double distance = peer.consensus_distance();
    const auto stats = peer.stats();
    const Resident at_end = resident();
    const double model_mib = floats * 4.0 / (1024 * 1024);
    const double gradient_mib = gradient.size() * 4.0 / (1024 * 1024);
    std::printf(
        "{\"rank\": %d, \"algorithm\": \"%s\", \"compressor\": \"%s\", \"floats\": %zu, \"model_mib\": %.1f, "
        "\"gradient_mib\": %.1f, \"rss_start_mib\": %.1f, \"rss_with_model_mib\": %.1f, \"peak_rss_mib\": %.1f, "
        "\"state_mib\": %.1f, \"state_per_model\": %.2f, \"peak_with_collectives_mib\": %.1f, \"bytes_sent\": %llu, "
        "\"steps\": %llu, "
        "\"consensus_distance\": %.6g, \"finite\": %s}\n",
        peer.rank(), algorithm.c_str(), compressor.c_str(), floats, model_mib, gradient_mib, at_start.now_mib,
        with_model.now_mib, after_steps.peak_mib, after_steps.peak_mib - with_model.now_mib,
        (after_steps.peak_mib - with_model.now_mib) / model_mib, at_end.peak_mib,
        static_cast<unsigned long long>(stats.bytes_sent), static_cast<unsigned long long>(stats.steps), distance,
        finite ? "true" : "false");
    std::fflush(stdout);
    return finite ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "model_memory_peer: %s\n", e.what());
    return 1;
  }
}
