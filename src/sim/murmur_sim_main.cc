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
#include <stdexcept>
#include <string>
#include <vector>

#include "common/log.h"
#include "gossip/schedule/errors.h"
#include "gossip/schedule/schedule_file.h"
#include "sim/calibration.h"
#include "sim/cluster_spec.h"
#include "sim/model_profile.h"
#include "sim/network_preset.h"
#include "sim/reference_report.h"
#include "sim/sim_report.h"
#include "sim/sim_rows.h"

namespace {
using namespace murmur::sim;

enum class Format { kText, kCsv, kMarkdown };

void write_rows(const std::vector<SimRow>& rows, Format format, bool paper_columns) {
  if (paper_columns && format == Format::kCsv) return write_paper_csv(std::cout, rows);
  switch (format) {
    case Format::kCsv: return write_csv(std::cout, rows);
    case Format::kMarkdown: return write_markdown(std::cout, rows);
    case Format::kText: return write_text(std::cout, rows);
  }
}

int calibrate(const ModelProfile& resnet50, int evaluations) {
  const FitResult fit = fit_constants(resnet50, calibrated_constants(), evaluations);
  std::cout << "# fitted on the 84 ResNet-50 cells in " << fit.evaluations << " evaluations: max |error| "
            << fit.max_abs_error * 100 << "%, median " << fit.median_abs_error * 100 << "%\n"
            << constants_as_source(fit.constants);
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"Simulates data-parallel training of a model on a cluster: the seed paper's synchronous "
               "methods as calibrated cost models, murmur's gossip algorithms run for real on a virtual "
               "clock (docs/sim.md).",
               "murmur-sim"};
  app.get_formatter()->column_width(36);
  SimRequest request;
  std::string gpus_list = "4,8,16,32";
  std::string methods = "paper";
  std::vector<std::string> stragglers;
  std::string cluster_file;
  bool paper_table = false, compare_reference = false, calibrate_flag = false, csv = false, markdown = false;
  int evaluations = 4000;
  app.add_option("--model", request.model, "built-in profile (resnet50, bert-base, bert-large) or a profile file")
      ->capture_default_str();
  app.add_option("--network", request.network, "network preset (10gbe-tcp, 100gb-ib-rdma, 100gbe-tcp)")
      ->capture_default_str();
  app.add_option("--cluster", cluster_file, "cluster file (GPUs, nodes, links, stragglers); overrides --network");
  app.add_option("--gpus", gpus_list, "GPU counts to simulate, comma-separated")->capture_default_str();
  app.add_option("--gpus-per-node", request.gpus_per_node, "GPUs in one node")->capture_default_str();
  app.add_option("--straggler", stragglers, "RANK:SLOWDOWN, a GPU that computes SLOWDOWN times slower (repeatable)");
  app.add_option("--method", methods,
                 "comma-separated: paper method names (BSP-A2A, WFBP-A2A, MG-WFBP, ByteScheduler-A2A, BSP-PS, "
                 "WFBP-PS, ByteScheduler-PS), `paper` for all seven, or murmur algorithms (dpsgd, choco, sgp, "
                 "allreduce, topk-allreduce, local-sgd)")
      ->capture_default_str();
  app.add_option("--topology", request.gossip.topology, "gossip topology")->capture_default_str();
  app.add_option("--compressor", request.gossip.compressor, "choco / topk-allreduce compressor")->capture_default_str();
  app.add_option("--gamma", request.gossip.gamma, "choco consensus step size")->capture_default_str();
  app.add_option("--period", request.gossip.period, "gossip period H")->capture_default_str();
  app.add_option("--schedule", request.gossip.schedule, "fixed | adaptive[:k=v,...] | @file (docs/scheduler.md)")
      ->capture_default_str();
  app.add_option("--iterations", request.gossip.iterations, "simulated iterations per gossip run")
      ->capture_default_str();
  app.add_option("--warmup", request.gossip.warmup,
                 "gossip: iterations run before measuring (-1: 2, or --iterations with an adaptive schedule)")
      ->capture_default_str();
  app.add_option("--proxy-floats", request.gossip.proxy_floats,
                 "floats each simulated peer really holds; message sizes are scaled to the model")
      ->capture_default_str();
  app.add_option("--seed", request.gossip.seed, "random seed (topology, data)")->capture_default_str();
  app.add_flag("--paper-table", paper_table,
               "all three models on the seed paper's networks, methods and GPU counts (with --csv: "
               "model,network,method,gpus,samples_per_s)");
  app.add_flag("--compare-reference", compare_reference, "the 84 ResNet-50 cells: measured against predicted");
  app.add_flag("--calibrate", calibrate_flag, "refit the paper methods' constants on the ResNet-50 cells");
  app.add_option("--evaluations", evaluations, "--calibrate: objective evaluations")->capture_default_str();
  app.add_flag("--csv", csv, "print CSV");
  app.add_flag("--markdown", markdown, "print a Markdown table");
  try {
    app.parse(argc, argv);
    if (csv && markdown) throw CLI::ValidationError("--csv and --markdown", "choose one");
    request.gpus = parse_gpu_list(gpus_list);
    request.methods = parse_method_list(methods);
    for (const std::string& s : stragglers) request.stragglers.push_back(parse_straggler(s));
    network_preset(request.network);
    murmur::gossip::schedule::parse_schedule_flag(request.gossip.schedule);
  } catch (const murmur::gossip::schedule::ScheduleError& e) {
    // A schedule file's own errors name path:line; a bad flag names the flag.
    std::cerr << "murmur-sim: --schedule: " << e.what() << "\n";
    return request.gossip.schedule.rfind('@', 0) == 0 ? 1 : 2;
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
  // A thousand simulated peers would print a thousand scheduler decisions
  // each round; MURMUR_LOG_LEVEL=info brings them back.
  if (!std::getenv("MURMUR_LOG_LEVEL")) murmur::sched_log().set_level(spdlog::level::warn);
  const Format format = csv ? Format::kCsv : markdown ? Format::kMarkdown : Format::kText;
  const auto started = std::chrono::steady_clock::now();

  std::vector<SimRow> rows;
  bool paper_columns = false;
  try {
    if (calibrate_flag) return calibrate(builtin_profile("resnet50"), evaluations);
    if (paper_table) {
      rows = paper_table_rows();
      paper_columns = true;
    } else if (compare_reference) {
      write_reference_comparison(std::cout, compare_with_reference(builtin_profile("resnet50"), calibrated_constants()),
                                 format == Format::kMarkdown);
      return 0;
    } else {
      if (!cluster_file.empty()) request.cluster = load_cluster_file(cluster_file);
      rows = simulate(request);
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
  write_rows(rows, format, paper_columns);
  std::cout.flush();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cerr << "murmur-sim: " << rows.size() << " rows simulated in " << seconds << " s\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "murmur-sim: " << e.what() << "\n";
    return 1;
  }
}
