// murmur-topo: build or read a topology and print its neighbours, mixing
// weights, degrees, diameter and spectral gap.
//
//   murmur-topo exponential -n 16
//   murmur-topo topologies/cluster-2x4.topo
//   murmur-topo random -n 32 --degree 4 --seed 7 --dot out.dot
//   murmur-topo one-peer-exponential -n 16 --round 3
//
// Exit status: 0 on success, 1 for a refused graph file, 2 for a usage error
// (unknown generator or flag, parameters the graph cannot have).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "gossip/topology/errors.h"
#include "gossip/topology/factory.h"
#include "gossip/topology/report.h"

namespace {
using murmur::gossip::TopologyError;

std::string generator_list() {
  std::string s;
  for (const auto& name : murmur::gossip::generator_names()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

int run(int argc, char** argv) {
  CLI::App app{
      "Builds a gossip topology (a generator or a .topo file, see "
      "docs/topology-format.md) and prints each node's neighbours and mixing "
      "weights, the degrees, the diameter and the spectral gap 1 - |lambda_2|.",
      "murmur-topo"};
  app.footer("Generators: " + generator_list() + "\nExit status: 0 ok, 1 refused graph file, 2 usage error.");
  app.get_formatter()->column_width(34);

  murmur::gossip::TopologySpec spec;
  std::string what;
  std::uint64_t round = 0;
  std::string dot_path;
  bool json = false;
  app.add_option("topology", what, "generator name or path of a .topo file")->required();
  app.add_option("-n,--nodes", spec.nodes, "number of nodes")->capture_default_str();
  app.add_option("-p,--probability", spec.probability, "edge probability (erdos-renyi)")->capture_default_str();
  app.add_option("-d,--degree", spec.degree, "degree (random: random regular)")->capture_default_str();
  app.add_option("--seed", spec.seed, "random seed (erdos-renyi, random)")->capture_default_str();
  app.add_option("--rows", spec.rows, "torus rows (0: the squarest shape for -n)")->capture_default_str();
  app.add_option("--cols", spec.cols, "torus columns (0: from -n)")->capture_default_str();
  app.add_option("--round", round, "round of a time-varying topology")->capture_default_str();
  app.add_option("--dot", dot_path, "also write the graph as Graphviz DOT to FILE")->capture_default_str();
  app.add_flag("--json", json, "print JSON instead of text")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "murmur-topo: " << e.what() << " (see murmur-topo --help)\n";
    return 2;
  }

  std::unique_ptr<murmur::gossip::Topology> topology;
  if (murmur::gossip::is_generator(what)) {
    spec.kind = what;
    try {
      topology = murmur::gossip::make_topology(spec);
    } catch (const TopologyError& e) {
      std::cerr << "murmur-topo: " << e.what() << "\n";
      return 2;
    }
  } else if (std::filesystem::is_regular_file(what)) {
    try {
      topology = murmur::gossip::load_topology(what);
    } catch (const TopologyError& e) {
      std::cerr << "murmur-topo: " << e.what() << "\n";
      return 1;
    }
  } else {
    std::cerr << "murmur-topo: '" << what << "' is neither a generator (" << generator_list()
              << ") nor a readable file\n";
    return 2;
  }

  const auto report = murmur::gossip::analyse(*topology, round);
  if (json) {
    print_json(std::cout, report);
  } else {
    print_text(std::cout, report);
  }
  if (!dot_path.empty()) {
    std::ofstream dot(dot_path);
    print_dot(dot, report);
    if (!dot.flush()) {
      std::cerr << "murmur-topo: cannot write " << dot_path << "\n";
      return 1;
    }
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "murmur-topo: " << e.what() << "\n";
    return 1;
  }
}
