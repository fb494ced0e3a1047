// One peer of the multi-process gossip tests (consensus_test). It joins the
// group through the rendezvous, wraps its transport in a FabricCommunicator,
// runs the consensus experiment of consensus_run.h (no gradient: pure
// averaging of seeded random vectors) and prints one "result rank=R ..."
// line ("joined rank=R" first, once the group is up, so that failure tests
// know when to kill a peer).
// Exit status: 0 on success, 1 on an error (message on stderr, prefixed
// "error:").
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "common/log.h"
#include "fabric/group.h"
#include "gossip/algorithm/fabric_communicator.h"
#include "tests/gossip/consensus_run.h"

int main(int argc, char** argv) {
  CLI::App app{"murmur gossip test peer"};
  murmur::fabric::GroupOptions options;
  murmur::testing::ConsensusSpec spec;
  bool overlap_set = false, overlap = true;
  app.add_option("--rank", options.rank)->required();
  app.add_option("--size", options.size)->required();
  app.add_option("--rendezvous-port", options.rendezvous_port)->required();
  app.add_option("--token", options.token);
  app.add_option("--backend", options.transport.backend);
  app.add_option("--provider", options.transport.provider);
  app.add_option("--heartbeat-ms", [&](const CLI::results_t& r) {
    options.heartbeat_interval = std::chrono::milliseconds(std::stoll(r[0]));
    return true;
  });
  app.add_option("--algorithm", spec.algorithm);
  app.add_option("--topology", spec.topology);
  app.add_option("--topology-seed", spec.topology_seed);
  app.add_option("--degree", spec.degree);
  app.add_option("--steps", spec.steps);
  app.add_option("--elements", spec.elements);
  app.add_option("--seed", spec.seed);
  app.add_option("--mode", spec.mode);
  app.add_option("--period", spec.options.period);
  app.add_option("--compressor", spec.options.compressor);
  app.add_option("--gamma", spec.options.gamma);
  app.add_option("--pick", spec.options.pick);
  app.add_option("--timeout-s", spec.options.timeout_s);
  app.add_flag("--sum", [&](std::int64_t) { spec.options.average = false; });
  app.add_option("--overlap", [&](const CLI::results_t& r) {
    overlap_set = true;
    overlap = r[0] == "1" || r[0] == "true";
    return true;
  });
  CLI11_PARSE(app, argc, argv);
  if (overlap_set) spec.options.overlap = overlap;
  murmur::set_log_rank(options.rank);
  try {
    auto group = murmur::fabric::Group::join(options);
    murmur::gossip::FabricCommunicator comm(group->transport(), group->peers());
    std::cout << "joined rank=" << options.rank << std::endl;
    auto start = std::chrono::steady_clock::now();
    auto result = murmur::testing::run_consensus(spec, comm);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << murmur::testing::format_result(options.rank, result) << " seconds=" << seconds << std::endl;
    // Nobody leaves while a neighbour may still need this rank's messages.
    group->barrier("gossip-test/done", std::chrono::seconds(120));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: rank " << options.rank << ": " << e.what() << std::endl;
    return 1;
  }
}
