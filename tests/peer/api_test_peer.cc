// One rank of a Peer API test job (started by tests/peer/api_test.cc through
// LocalJob). Uses only the public header murmur/peer.h, as an embedding
// program would. Each rank holds two tensors filled from its rank, gossips
// them with --algorithm for --steps steps, and checks the collectives.
// Prints "ok ..." lines the driver checks; exits 1 with the reason otherwise.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "murmur/peer.h"

int main(int argc, char** argv) {
  int rank = 0, size = 1, port = 0, steps = 200;
  std::string token, algorithm = "dpsgd", topology = "ring", compressor = "identity";
  int mismatch_rank = -1;
  std::string schedule = "fixed", link_profile;
  double compute_ms = 0;
  std::string decisions_file, provider = "auto";
  CLI::App app{"Peer API test peer"};
  app.add_option("--rank", rank);
  app.add_option("--size", size);
  app.add_option("--rendezvous-port", port);
  app.add_option("--token", token);
  app.add_option("--algorithm", algorithm);
  app.add_option("--topology", topology);
  app.add_option("--compressor", compressor);
  app.add_option("--steps", steps);
  app.add_option("--mismatch-rank", mismatch_rank, "this rank registers one float more");
  app.add_option("--schedule", schedule);
  app.add_option("--link-profile", link_profile);
  app.add_option("--compute-ms", compute_ms, "sleep this long per step, as a trainer computes");
  app.add_option("--provider", provider);
  std::string interface, backend = "libfabric";
  int interface_rank = -1;
  app.add_option("--interface", interface);
  app.add_option("--interface-rank", interface_rank, "only this rank takes --interface (-1: every rank)");
  app.add_option("--backend", backend);
  std::vector<std::string> host_ids;
  app.add_option("--host-ids", host_ids, "$MURMUR_HOST_ID of each rank, by rank (emulated machines)")->delimiter(',');
  bool survive = true;
  app.add_flag("!--no-survive", survive, "the job ends at the first lost peer");
  app.add_option("--decisions-file", decisions_file, "append the scheduler's decisions to FILE.<rank> (debugging)");
  double gamma = murmur::GossipOptions{}.gamma;
  app.add_option("--gamma", gamma, "choco's consensus step size");
  CLI11_PARSE(app, argc, argv);
  try {
    murmur::PeerConfig config;
    config.rank = rank;
    config.world_size = size;
    config.rendezvous = "127.0.0.1:" + std::to_string(port);
    config.token = token;
    config.algorithm = algorithm;
    config.topology = topology;
    config.compressor = compressor;
    config.gamma = gamma;
    config.timeout_s = 30;
    config.schedule = schedule;
    config.provider = provider;
    config.link_profile = link_profile;
    if (interface_rank < 0 || interface_rank == rank) config.interface = interface;
    config.backend = backend;
    config.survive_lost_peers = survive;
    if (rank < static_cast<int>(host_ids.size())) ::setenv("MURMUR_HOST_ID", host_ids[rank].c_str(), 1);
    int decisions = 0, reactions = 0;  // agreed ones; between agreements
    std::FILE* decisions_out =
        decisions_file.empty() ? nullptr : std::fopen((decisions_file + "." + std::to_string(rank)).c_str(), "a");
    config.on_schedule_decision = [&decisions, &reactions, decisions_out](const std::string& d) {
      ++(d.find("\"agreed\":false") != std::string::npos ? reactions : decisions);
      if (decisions_out != nullptr) std::fprintf(decisions_out, "%s\n", d.c_str());
    };
    murmur::Peer peer(config);

    // Rank r holds weights = r + i/1000 and bias = -r: the mean is known.
    std::vector<float> weights(1000 + (rank == mismatch_rank ? 1 : 0)), bias(10);
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(rank) + i / 1000.0f;
    for (auto& b : bias) b = -static_cast<float>(rank);
    peer.add_tensor("weights", weights.data(), weights.size());
    peer.add_tensor("bias", bias.data(), bias.size(), murmur::MemoryKind::kHost);

    const double spread_before = peer.consensus_distance();
    for (int s = 0; s < steps; ++s) {
      if (compute_ms > 0) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(compute_ms * 1000)));
      peer.step();
    }
    const auto tuned = peer.stats();  // before finish: what the scheduler chose last
    peer.finish();
    const double spread_after = peer.consensus_distance();

    const double mean_rank = (size - 1) / 2.0;
    double worst = 0;
    for (std::size_t i = 0; i < weights.size(); ++i)
      worst = std::max(worst, std::fabs(weights[i] - (mean_rank + i / 1000.0)));
    for (float b : bias) worst = std::max(worst, std::fabs(b + mean_rank));

    std::vector<float> averaged(peer.parameter_count());
    peer.averaged_model(averaged.data());
    double worst_averaged = 0;
    for (std::size_t i = 0; i < 1000; ++i)
      worst_averaged = std::max(worst_averaged, std::fabs(averaged[i] - (mean_rank + i / 1000.0)));

    const double mean_of_ranks = peer.average(static_cast<double>(rank));
    const auto stats = peer.stats();
    std::printf(
        "ok rank=%d spread_before=%.6g spread_after=%.6g worst=%.3g worst_averaged=%.3g mean_of_ranks=%.17g "
        "bytes_sent=%llu links=%zu steps=%llu host0=%s period=%d ratio=%g decisions=%d reactions=%d\n",
        peer.rank(), spread_before, spread_after, worst, worst_averaged, mean_of_ranks,
        static_cast<unsigned long long>(stats.bytes_sent), stats.links.size(),
        static_cast<unsigned long long>(stats.steps), peer.host(0).c_str(), tuned.period, tuned.ratio, decisions,
        reactions);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "api_test_peer rank %d: %s\n", rank, e.what());
    return 1;
  }
}
