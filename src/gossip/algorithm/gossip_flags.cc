#include "gossip/algorithm/gossip_flags.h"

#include "common/text.h"
#include "gossip/algorithm/registry.h"

namespace murmur::gossip {
namespace {

// (0, 1]: a consensus step size. CLI::Range would accept 0.
CLI::Validator unit_interval() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        double v = 0;
        if (!parse_number(value, v) || !(v > 0 && v <= 1)) return "value " + value + " not in (0, 1]";
        return {};
      },
      "(0, 1]");
}

}  // namespace

void add_gossip_flags(CLI::App& app, GossipOptions& o, unsigned which, const std::string& group) {
  if (which & kAlgorithmFlag)
    app.add_option("--algorithm", o.algorithm, algorithm_list())->capture_default_str()->group(group);
  if (which & kTopologyFlags) {
    app.add_option("--topology", o.topology, "graph: a generator (murmur-topo --help) or a .topo file")
        ->capture_default_str()
        ->group(group);
    app.add_option("--degree", o.topology_degree, "degree of --topology random")->capture_default_str()->group(group);
  }
  if (which & kTopologySeedFlag)
    app.add_option("--topology-seed", o.topology_seed, "seed of random topologies")
        ->capture_default_str()
        ->group(group);
  if (which & kCompressorFlag) {
    const std::string users = algorithm_list([](const AlgorithmInfo& a) { return a.takes_compressor; }, " and ");
    app.add_option("--compressor,--compress", o.compressor, "compressor for " + users + " (docs/compressors.md)")
        ->capture_default_str()
        ->group(group);
  }
  if (which & kPeriodFlag) {
    app.add_option("--period", o.period, "communicate every H-th step (H: the gossip period)")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str()
        ->group(group);
    app.add_option("--gossip-warmup", o.warmup_steps,
                   "communicate at each of the first N steps, whatever --period or the scheduler says (0: off)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str()
        ->group(group);
  }
  if (which & kGammaFlag) {
    const std::string users = algorithm_list([](const AlgorithmInfo& a) { return a.uses_gamma; }, " and ");
    app.add_option("--gamma", o.gamma, users + " consensus step size, in (0, 1]")
        ->check(unit_interval())
        ->capture_default_str()
        ->group(group);
  }
  if (which & kScheduleFlags) {
    app.add_option("--schedule", o.schedule,
                   "fixed (period and compressor as given), adaptive[:key=value,...] or @file: the latency-aware "
                   "scheduler (docs/scheduler.md)")
        ->capture_default_str()
        ->group(group);
    app.add_option("--schedule-interval", o.schedule_interval, "steps between the scheduler's decisions")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str()
        ->group(group);
  }
  if (which & kGradientMethodFlags) {
    app.add_option("--servers", o.ps_servers,
                   "bsp-ps, wfbp-ps, bytescheduler-ps: the first K members run a server thread (0: every member)")
        ->check(CLI::Range(0, 1000000))
        ->capture_default_str()
        ->group(group);
    app.add_option("--topk-density", o.topk_density, "topk-sgd: fraction of the gradient each rank sends, in (0, 1]")
        ->check(unit_interval())
        ->capture_default_str()
        ->group(group);
  }
  if (which & kPartitionFlags) {
    app.add_option("--bytescheduler-partition", o.bytescheduler_partition,
                   "bytescheduler-a2a and -ps: largest gradient partition, in floats (ByteScheduler's default)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
        ->capture_default_str()
        ->group(group);
    app.add_option("--bytescheduler-credit", o.bytescheduler_credit,
                   "bytescheduler-a2a and -ps: floats of partitions on the wire at once (ByteScheduler's default)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
        ->capture_default_str()
        ->group(group);
    app.add_option("--ps-partition", o.ps_partition,
                   "bsp-ps, wfbp-ps, bytescheduler-ps: largest shard a server holds, in floats; larger tensors are "
                   "spread over several servers (BytePS's default partition)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
        ->capture_default_str()
        ->group(group);
  }
}

}  // namespace murmur::gossip
