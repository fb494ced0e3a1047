// murmur-sim: predicts training throughput on clusters one machine cannot
// hold. The seed paper's methods (BSP/WFBP all-reduce, MG-WFBP, parameter
// servers, ByteScheduler) run as calibrated cost models (paper_methods.h);
// murmur's gossip algorithms run for real, every peer a simulated thread on a
// virtual clock (gossip_run.h).
//
//   murmur-sim --model resnet50 --network 10gbe-tcp --gpus 4,8,16,32
//   murmur-sim --model bert-large --gpus 32 --method choco --schedule adaptive
//   murmur-sim --paper-table --csv
//   murmur-sim --compare-reference --markdown
//   murmur-sim --calibrate
//
// Exit status: 0 ok, 1 a refused input file, 2 a usage error.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/log.h"
#include "gossip/algorithm/gossip_flags.h"
#include "gossip/algorithm/registry.h"
#include "gossip/schedule/errors.h"
#include "gossip/schedule/schedule_file.h"
#include "sim/cli/reference_report.h"
#include "sim/cli/sim_report.h"
#include "sim/cli/sim_rows.h"
#include "sim/cluster_spec.h"
#include "sim/cost/calibration.h"
#include "sim/cost/cross_validation.h"
#include "sim/cost/free_constants.h"
#include "sim/cost/network_preset.h"
#include "sim/model_profile.h"

namespace murmur::sim::cli {
namespace {

enum class Format { kText, kCsv, kMarkdown };

void write_rows(const std::vector<SimRow>& rows, Format format, bool paper_columns) {
  if (paper_columns && format == Format::kCsv) return write_paper_csv(std::cout, rows);
  switch (format) {
    case Format::kCsv:
      return write_csv(std::cout, rows);
    case Format::kMarkdown:
      return write_markdown(std::cout, rows);
    case Format::kText:
      return write_text(std::cout, rows);
  }
}

int calibrate(const ModelProfile& resnet50, int evaluations) {
  std::vector<double> start;
  for (const cost::FreeConstant& c : cost::shipped_free_constants()) start.push_back(c.value);
  const cost::FitResult fit = cost::fit_constants(resnet50, start, evaluations);
  std::cout << "# fitted on the 84 ResNet-50 cells in " << fit.evaluations << " evaluations: max |error| "
            << fit.max_abs_error * 100 << "%, median " << fit.median_abs_error * 100 << "%\n"
            << cost::constants_as_source(fit.values);
  return 0;
}

// Leave-one-network-out and leave-one-method-out, as a Markdown table.
int cross_validate(const ModelProfile& resnet50, int evaluations) {
  std::cout << "| held out | cells | fit median | fit max | held-out median | held-out max |\n"
            << "|---|---:|---:|---:|---:|---:|\n";
  std::cout.setf(std::ios::fixed);
  std::cout.precision(1);
  for (const cost::HeldOutFold& f : cost::cross_validate(resnet50, evaluations))
    std::cout << "| " << f.held_out << " | " << f.cells << " | " << f.fit_median_abs_error * 100 << "% | "
              << f.fit_max_abs_error * 100 << "% | " << f.median_abs_error * 100 << "% | " << f.max_abs_error * 100
              << "% |\n"
              << std::flush;
  return 0;
}

// What the command line asks for.
struct CommandLine {
  SimRequest request;
  std::string gpus_list = "4,8,16,32";
  std::string methods = "paper";
  std::vector<std::string> stragglers;
  std::string cluster_file;
  bool paper_table = false, compare_reference = false, calibrate = false, cross_validate = false, csv = false,
       markdown = false;
  int evaluations = 4000;
};

void add_flags(CLI::App& app, CommandLine& c) {
  SimRequest& request = c.request;
  app.add_option("--model", request.model, "built-in profile (resnet50, bert-base, bert-large) or a profile file")
      ->capture_default_str();
  app.add_option("--network", request.network, "network preset (10gbe-tcp, 100gb-ib-rdma, 100gbe-tcp)")
      ->capture_default_str();
  app.add_option("--cluster", c.cluster_file, "cluster file (GPUs, nodes, links, stragglers); overrides --network");
  app.add_option("--gpus", c.gpus_list, "GPU counts to simulate, comma-separated")->capture_default_str();
  app.add_option("--gpus-per-node", request.gpus_per_node, "GPUs in one node")->capture_default_str();
  app.add_option("--straggler", c.stragglers, "RANK:SLOWDOWN, a GPU that computes SLOWDOWN times slower (repeatable)");
  const std::string simulable = murmur::gossip::algorithm_list([](const auto& a) { return a.simulable; });
  app.add_option("--method", c.methods,
                 "comma-separated: paper method names (BSP-A2A, WFBP-A2A, MG-WFBP, ByteScheduler-A2A, BSP-PS, "
                 "WFBP-PS, ByteScheduler-PS), `paper` for all seven, or murmur algorithms (" +
                     simulable + ")")
      ->capture_default_str();
  // The algorithm comes from --method; the topology seed follows --seed.
  murmur::gossip::add_gossip_flags(
      app, request.gossip.gossip,
      murmur::gossip::kGossipAll &
          ~(murmur::gossip::kAlgorithmFlag | murmur::gossip::kTopologySeedFlag | murmur::gossip::kGradientMethodFlags));
  app.add_option("--iterations", request.gossip.iterations, "simulated iterations per gossip run")
      ->capture_default_str()
      ->group("Gossip");
  app.add_option("--warmup", request.gossip.warmup,
                 "gossip: iterations run before measuring (-1: 2, or --iterations with an adaptive schedule)")
      ->capture_default_str()
      ->group("Gossip");
  app.add_option("--proxy-floats", request.gossip.proxy_floats,
                 "floats each simulated peer really holds; message sizes are scaled to the model")
      ->capture_default_str()
      ->group("Gossip");
  app.add_option("--seed", request.gossip.gossip.seed, "random seed (topology, data)")
      ->capture_default_str()
      ->group("Gossip");
  app.add_flag("--paper-table", c.paper_table,
               "all three models on the seed paper's networks, methods and GPU counts (with --csv: "
               "model,network,method,gpus,samples_per_s)");
  app.add_flag("--compare-reference", c.compare_reference, "the 84 ResNet-50 cells: measured against predicted");
  app.add_flag("--calibrate", c.calibrate, "refit the paper methods' constants on the ResNet-50 cells");
  app.add_flag("--cross-validate", c.cross_validate,
               "fit without each network, then each method, from the priors; print the held-out errors");
  app.add_option("--evaluations", c.evaluations, "--calibrate: objective evaluations")->capture_default_str();
  app.add_flag("--csv", c.csv, "print CSV");
  app.add_flag("--markdown", c.markdown, "print a Markdown table");
}

// Parses and checks the flags; an exit status when the program should stop
// (help, a usage error), else nullopt.
std::optional<int> parse(CLI::App& app, CommandLine& c, int argc, char** argv) {
  SimRequest& request = c.request;
  try {
    app.parse(argc, argv);
    if (c.csv && c.markdown) throw CLI::ValidationError("--csv and --markdown", "choose one");
    request.gpus = parse_gpu_list(c.gpus_list);
    request.methods = parse_method_list(c.methods);
    for (const std::string& s : c.stragglers) request.stragglers.push_back(parse_straggler(s));
    cost::network_preset(request.network);
    murmur::gossip::schedule::parse_schedule_flag(request.gossip.gossip.schedule);
  } catch (const murmur::gossip::schedule::ScheduleError& e) {
    // A schedule file's own errors name path:line; a bad flag names the flag.
    std::cerr << "murmur-sim: --schedule: " << e.what() << "\n";
    return request.gossip.gossip.schedule.rfind('@', 0) == 0 ? 1 : 2;
  } catch (const ClusterError& e) {
    std::cerr << "murmur-sim: --network: " << e.what() << "\n";
    return 2;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "murmur-sim: " << e.what() << " (see murmur-sim --help)\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "murmur-sim: " << e.what() << " (see murmur-sim --help)\n";
    return 2;
  }
  return std::nullopt;
}

// Computes what was asked for into `rows` (a report other than rows, such as
// --calibrate, is printed here); an exit status when the program should
// stop, else nullopt.
std::optional<int> compute(CommandLine& c, Format format, std::vector<SimRow>& rows) {
  try {
    if (c.calibrate) return calibrate(builtin_profile("resnet50"), c.evaluations);
    if (c.cross_validate) return cross_validate(builtin_profile("resnet50"), c.evaluations);
    if (c.paper_table) {
      rows = paper_table_rows();
    } else if (c.compare_reference) {
      write_reference_comparison(
          std::cout, cost::compare_with_reference(builtin_profile("resnet50"), cost::calibrated_constants()),
          format == Format::kMarkdown);
      return 0;
    } else {
      if (!c.cluster_file.empty()) c.request.cluster = load_cluster_file(c.cluster_file);
      rows = simulate(c.request);
    }
  } catch (const ProfileError& e) {
    std::cerr << "murmur-sim: " << e.what() << "\n";
    return 1;
  } catch (const ClusterError& e) {
    std::cerr << "murmur-sim: " << e.what() << "\n";
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << "murmur-sim: " << e.what() << "\n";
    return 2;
  }
  return std::nullopt;
}

int run(int argc, char** argv) {
  CLI::App app{
      "Simulates data-parallel training of a model on a cluster: the seed paper's synchronous "
      "methods as calibrated cost models, murmur's gossip algorithms run for real on a virtual "
      "clock (docs/sim.md).",
      "murmur-sim"};
  app.get_formatter()->column_width(36);
  CommandLine cli;
  add_flags(app, cli);
  if (const auto status = parse(app, cli, argc, argv)) return *status;
  // A thousand simulated peers would print a thousand scheduler decisions
  // each round; MURMUR_LOG_LEVEL=info brings them back.
  if (!std::getenv("MURMUR_LOG_LEVEL")) murmur::sched_log().set_level(spdlog::level::warn);
  const Format format = cli.csv ? Format::kCsv : cli.markdown ? Format::kMarkdown : Format::kText;
  const auto started = std::chrono::steady_clock::now();

  std::vector<SimRow> rows;
  if (const auto status = compute(cli, format, rows)) return *status;
  write_rows(rows, format, /*paper_columns=*/cli.paper_table);
  std::cout.flush();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cerr << "murmur-sim: " << rows.size() << " rows simulated in " << seconds << " s\n";
  return 0;
}

}  // namespace
}  // namespace murmur::sim::cli

int main(int argc, char** argv) {
  try {
    return murmur::sim::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "murmur-sim: " << e.what() << "\n";
    return 1;
  }
}
