#include "sim/cli/sim_rows.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "common/text.h"
#include "gossip/algorithm/registry.h"
#include "gossip/schedule/schedule_file.h"
#include "sim/cost/network_preset.h"
#include "sim/cost/paper_methods.h"
#include "sim/model_profile.h"
#include "sim/runtime/gossip_run.h"

namespace murmur::sim::cli {
namespace {

std::vector<std::string> split(const std::string& list, char sep) {
  std::vector<std::string> items;
  std::string item;
  for (char ch : list) {
    if (ch == sep) {
      items.push_back(item);
      item.clear();
    } else {
      item += ch;
    }
  }
  items.push_back(item);
  return items;
}

bool is_paper_method(const std::string& name) {
  for (cost::PaperMethod m : cost::paper_methods())
    if (paper_method_name(m) == name) return true;
  return false;
}

// The methods' partition knobs as the job's flags set them: murmur-peer's,
// which count floats (the published defaults are bytes: 1,000,000 floats
// are ByteScheduler's 4,000,000 bytes, whatever the profile's gradient
// precision).
cost::MethodKnobs method_knobs(const GossipOptions& options) {
  constexpr double kFloatBytes = sizeof(float);
  cost::MethodKnobs knobs;
  knobs.bytescheduler_partition_bytes = static_cast<double>(options.bytescheduler_partition) * kFloatBytes;
  knobs.bytescheduler_credit_bytes = static_cast<double>(options.bytescheduler_credit) * kFloatBytes;
  knobs.ps_partition_bytes = static_cast<double>(options.ps_partition) * kFloatBytes;
  return knobs;
}

SimRow paper_row(cost::PaperMethod method, const ModelProfile& profile, const ClusterSpec& cluster,
                 const cost::MethodKnobs& knobs = {}) {
  SimRow row;
  row.model = profile.name;
  row.network = cluster.network;
  row.method = paper_method_name(method);
  row.gpus = cluster.gpus;
  if (cluster.gpus == 1) {
    // One GPU is the calibration's base: no communication at all.
    row.samples_per_s = profile.single_gpu_samples_per_s;
    row.speedup = 1;
    row.iteration_s = row.compute_s = profile.iteration_s();
    return row;
  }
  const cost::MethodPrediction p =
      cost::predict_paper_method(method, profile, cluster, cost::calibrated_constants(), knobs);
  row.samples_per_s = p.samples_per_s;
  row.speedup = p.speedup;
  row.iteration_s = p.iteration_s;
  row.compute_s = p.compute_s;
  row.comm_s = p.comm_s;
  row.overlap_s = p.overlap_s;
  row.exposed_s = p.exposed_s;
  row.link_bytes = p.nic_bytes;
  row.configuration = std::to_string(p.messages) + " messages";
  return row;
}

// murmur's own algorithm, run on the virtual clock.
SimRow gossip_row(const std::string& algorithm, const ModelProfile& profile, const ClusterSpec& cluster,
                  const GossipRunOptions& options) {
  runtime::GossipSetup setup;
  setup.profile = profile;
  setup.cluster = cluster;
  setup.options = options.gossip;
  setup.options.algorithm = algorithm;
  setup.options.topology_seed = options.gossip.seed;
  setup.iterations = options.iterations;
  setup.proxy = static_cast<std::size_t>(options.proxy_floats);
  const bool adaptive =
      gossip::schedule::parse_schedule_flag(options.gossip.schedule).mode == gossip::schedule::ScheduleMode::kAdaptive;
  setup.warmup_iterations = options.warmup >= 0 ? options.warmup : adaptive ? options.iterations : 2;
  const runtime::GossipResult r = runtime::run_gossip(setup);

  SimRow row;
  row.model = profile.name;
  row.network = cluster.network;
  row.method = algorithm;
  row.gpus = cluster.gpus;
  row.samples_per_s = r.samples_per_s;
  row.speedup = r.speedup;
  row.iteration_s = r.iteration_s;
  row.compute_s = r.compute_s;
  row.exposed_s = std::max(0.0, r.iteration_s - r.compute_s);
  row.overlap_s = r.overlap_s;
  row.comm_s = r.wait_s + r.overlap_s;
  double busiest = 0;
  for (const runtime::LinkBytes& link : r.links) busiest = std::max(busiest, link.bytes);
  const int iterations = setup.warmup_iterations + setup.iterations;
  row.link_bytes = busiest / iterations;
  const gossip::AlgorithmInfo& info = gossip::algorithm_info(algorithm);
  std::string what = info.centralized ? "" : options.gossip.topology + " ";
  if (info.takes_compressor) what += options.gossip.compressor + " ";
  if (adaptive && r.final_period)
    what += fmt::format("adaptive: chose H={} ratio={:.4g}", *r.final_period, r.final_ratio.value_or(0));
  else
    what += fmt::format("H={}", options.gossip.period);
  row.configuration = what + fmt::format("; consensus distance {:.3g} -> {:.3g}; simulated in {:.2f} s",
                                         r.initial_consensus_distance, r.consensus_distance, r.host_seconds);
  return row;
}

ClusterSpec preset_cluster(const std::string& network, int gpus, int gpus_per_node) {
  ClusterSpec cluster;
  cluster.gpus = gpus;
  cluster.gpus_per_node = gpus_per_node;
  cost::apply_network_preset(cluster, network);
  return cluster;
}

}  // namespace

std::vector<int> parse_gpu_list(const std::string& list) {
  std::vector<int> gpus;
  for (const std::string& item : split(list, ',')) {
    int n = 0;
    if (!parse_number(item, n) || n < 1 || n > 65536)
      throw std::invalid_argument("--gpus: '" + item + "' is not a GPU count (1..65536)");
    gpus.push_back(n);
  }
  return gpus;
}

std::vector<std::string> parse_method_list(const std::string& list) {
  std::vector<std::string> methods;
  for (const std::string& item : split(list, ',')) {
    if (item == "paper") {
      for (cost::PaperMethod m : cost::paper_methods()) methods.push_back(paper_method_name(m));
    } else if (is_paper_method(item) || gossip::find_algorithm(item) != nullptr) {
      methods.push_back(item);
    } else {
      std::string known = "paper";
      for (cost::PaperMethod m : cost::paper_methods()) known += ", " + paper_method_name(m);
      known += ", " + gossip::algorithm_list();
      throw std::invalid_argument("--method: unknown method '" + item + "' (known: " + known + ")");
    }
  }
  return methods;
}

Straggler parse_straggler(const std::string& item) {
  const auto colon = item.find(':');
  Straggler s;
  if (colon == std::string::npos || !parse_number(item.substr(0, colon), s.rank) ||
      !parse_number(item.substr(colon + 1), s.slowdown) || s.rank < 0 || !(s.slowdown >= 1))
    throw std::invalid_argument("--straggler: '" + item + "' is not RANK:SLOWDOWN (rank >= 0, slowdown >= 1)");
  return s;
}

std::vector<SimRow> simulate(const SimRequest& request) {
  const ModelProfile profile = resolve_profile(request.model);
  std::vector<ClusterSpec> clusters;
  if (request.cluster) {
    clusters.push_back(*request.cluster);
  } else {
    for (int gpus : request.gpus) clusters.push_back(preset_cluster(request.network, gpus, request.gpus_per_node));
  }
  for (ClusterSpec& cluster : clusters) {
    for (const Straggler& s : request.stragglers) {
      if (s.rank >= cluster.gpus)
        throw std::invalid_argument("--straggler: rank " + std::to_string(s.rank) + " is not below " +
                                    std::to_string(cluster.gpus) + " GPUs");
      cluster.stragglers.push_back(s);
    }
  }
  std::vector<SimRow> rows;
  for (const std::string& method : request.methods)
    for (const ClusterSpec& cluster : clusters) {
      if (is_paper_method(method)) {
        rows.push_back(
            paper_row(cost::paper_method_by_name(method), profile, cluster, method_knobs(request.gossip.gossip)));
      } else {
        rows.push_back(gossip_row(method, profile, cluster, request.gossip));
      }
    }
  return rows;
}

std::vector<SimRow> paper_table_rows() {
  std::vector<SimRow> rows;
  for (const std::string& model : builtin_profile_names()) {
    const ModelProfile profile = builtin_profile(model);
    for (const cost::NetworkPreset& network : cost::network_presets())
      for (cost::PaperMethod method : cost::paper_methods())
        for (int gpus : {1, 4, 8, 16, 32})
          rows.push_back(paper_row(method, profile, preset_cluster(network.name, gpus, 4)));
  }
  return rows;
}

}  // namespace murmur::sim::cli
