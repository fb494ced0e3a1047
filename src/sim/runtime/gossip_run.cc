#include "sim/runtime/gossip_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>

#include "gossip/algorithm/gossip_setup.h"
#include "gossip/algorithm/registry.h"
#include "gossip/schedule/controller.h"
#include "sim/network_model.h"
#include "sim/runtime/sim_communicator.h"
#include "sim/runtime/virtual_runtime.h"

namespace murmur::sim::runtime {
namespace {

// The schedulers' gather as a simulated collective, lagged by one call as
// the real one is (peer/api/schedule_agreement.h): a rank publishes its
// proposal and gets every rank's from its previous call (the first two calls:
// the first call's), waiting only while some rank has not made that call
// yet. It takes no virtual time (the real one is a few scalars through the
// rendezvous store). Baton holders only.
class SimGather {
 public:
  using Proposal = gossip::schedule::ScheduleProposal;
  SimGather(VirtualRuntime& runtime, int ranks) : runtime_(runtime), ranks_(ranks), calls_(ranks, 0) {}

  std::vector<Proposal> operator()(int rank, const Proposal& mine) {
    const std::uint64_t call = calls_[static_cast<std::size_t>(rank)]++;
    Generation& published = generations_[call];
    if (published.proposals.empty()) published.proposals.resize(static_cast<std::size_t>(ranks_));
    published.proposals[static_cast<std::size_t>(rank)] = mine;
    ++published.arrived;
    runtime_.notify_all(this);
    const std::uint64_t wanted = call == 0 ? 0 : call - 1;
    while (generations_[wanted].arrived < ranks_) runtime_.wait(this, "the schedule's agreement (gather)");
    std::vector<Proposal> result = generations_[wanted].proposals;
    // Every rank has published `wanted`, so none reads below wanted - 1.
    while (!generations_.empty() && generations_.begin()->first + 1 < wanted) generations_.erase(generations_.begin());
    return result;
  }

 private:
  struct Generation {
    std::vector<Proposal> proposals;
    int arrived = 0;
  };
  VirtualRuntime& runtime_;
  const int ranks_;
  std::vector<std::uint64_t> calls_;
  std::map<std::uint64_t, Generation> generations_;
};

// What one simulated peer leaves behind.
struct PeerOutcome {
  std::vector<float> params;
  double iteration_s = 0;
  double wait_s = 0;
  double comm_s = 0;
  int decisions = 0;
  int reactions = 0;
  std::optional<int> period;
  std::optional<double> ratio;
};

// Returns the parsed schedule.
gossip::schedule::ScheduleConfig validate(const GossipSetup& s) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("murmur-sim gossip run: " + what); };
  const auto simulable = [](const gossip::AlgorithmInfo& a) { return a.simulable; };
  const gossip::AlgorithmInfo* info = gossip::find_algorithm(s.options.algorithm);
  if (info == nullptr)
    fail("unknown algorithm '" + s.options.algorithm + "'; expected " + gossip::algorithm_list(simulable, " or "));
  if (!info->simulable)
    fail(s.options.algorithm + " cannot be simulated (" + std::string(info->not_simulable_because) + "); use " +
         gossip::algorithm_list([](const auto& a) { return a.simulable && a.needs_topology; }, " or "));
  if (s.cluster.gpus < 1) fail("the cluster needs at least 1 GPU, got " + std::to_string(s.cluster.gpus));
  if (info->needs_topology && s.cluster.gpus < 2) fail(s.options.algorithm + " needs at least 2 GPUs");
  if (s.iterations < 1 || s.warmup_iterations < 0)
    fail("iterations must be >= 1 and warm-up >= 0, got " + std::to_string(s.iterations) + " and " +
         std::to_string(s.warmup_iterations));
  if (s.proxy < 1) fail("proxy must be >= 1 parameter");
  if (!s.initial.empty() && s.initial.size() != s.proxy)
    fail("the initial parameters have " + std::to_string(s.initial.size()) + " values, the proxy " +
         std::to_string(s.proxy));
  if (s.flush_every < 0) fail("flush_every must be >= 0");
  if (!(s.profile.gradient_bytes() > 0)) fail("profile '" + s.profile.name + "' has no parameters");
  if (!(s.profile.iteration_s() >= 0) || s.profile.batch < 1 || !(s.profile.single_gpu_samples_per_s > 0))
    fail("profile '" + s.profile.name + "' needs a batch >= 1, a single-GPU throughput > 0 and layer times >= 0");
  return gossip::check_gossip_options(s.options);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seeded per rank: the proxy's start in [-1, 1) and its pseudo-gradients.
std::vector<float> initial_params(std::uint64_t seed, int rank, std::size_t n) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = u(rng);
  return x;
}

// A cheap pseudo-gradient step: +-0.5e-3 per value (xorshift64*).
void perturb(std::span<float> x, std::uint64_t& state) {
  for (float& v : x) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const std::uint64_t r = state * 0x2545F4914F6CDD1DULL;
    v += 1e-3f * (static_cast<float>(r >> 40) / static_cast<float>(1 << 24) - 0.5f);
  }
}

// RMS over peers and elements of x_r - mean, and the mean itself.
std::pair<double, std::vector<double>> consensus(const std::vector<PeerOutcome>& peers) {
  const std::size_t n = peers.front().params.size();
  std::vector<double> mean(n, 0.0);
  for (const auto& p : peers)
    for (std::size_t i = 0; i < n; ++i) mean[i] += p.params[i];
  for (double& m : mean) m /= static_cast<double>(peers.size());
  double squares = 0;
  for (const auto& p : peers)
    for (std::size_t i = 0; i < n; ++i) squares += (p.params[i] - mean[i]) * (p.params[i] - mean[i]);
  return {std::sqrt(squares / static_cast<double>(n * peers.size())), std::move(mean)};
}

void fill_traffic(const NetworkModel& model, int iterations, GossipResult& r) {
  for (const auto& [link, bytes] : model.link_bytes()) r.links.push_back(LinkBytes{link.first, link.second, bytes});
  r.bytes_inter_node = model.inter_node_bytes();
  r.bytes_intra_node = model.intra_node_bytes();
  r.bytes_total = r.bytes_inter_node + r.bytes_intra_node;
  r.bytes_per_iteration = r.bytes_total / iterations;
  r.messages = model.messages();
}

// What every simulated peer shares: set up once, read by all.
struct SharedRun {
  const GossipSetup& s;
  VirtualRuntime& runtime;
  SimNetwork& network;
  SimGather& gather;
  const gossip::Topology* topology;
  const gossip::AlgorithmOptions& options;
  // Adaptive only: the schedule, its small-message threshold scaled to the
  // proxy (the scheduler sees proxy-sized messages: its idea of a message
  // that measures latency only must shrink with them).
  const std::optional<gossip::schedule::ScheduleConfig>& schedule;
};

// One simulated peer, on its own simulated thread: the iterations, then
// finish().
void run_peer(const SharedRun& run, int r, PeerOutcome& me) {
  const GossipSetup& s = run.s;
  VirtualRuntime& runtime = run.runtime;
  SimCommunicator comm(run.network, r);
  auto algorithm = gossip::make_algorithm(s.options.algorithm, run.options, comm, run.topology);
  std::unique_ptr<gossip::schedule::ScheduleController> controller;
  if (run.schedule) {
    controller = std::make_unique<gossip::schedule::ScheduleController>(
        *run.schedule, *algorithm, s.proxy, s.options.schedule_interval,
        [&gather = run.gather, r](const gossip::schedule::ScheduleProposal& p) { return gather(r, p); },
        [&me, &s, &runtime, r](const nlohmann::json& decision) {
          ++(decision.value("agreed", true) ? me.decisions : me.reactions);
          if (s.on_decision) s.on_decision(r, runtime.now(), decision);
        });
  }
  const double compute_s = s.profile.iteration_s() * s.cluster.slowdown(r);
  std::uint64_t noise = s.options.seed * 0xD1B54A32D192ED03ULL + static_cast<std::uint64_t>(r) * 2 + 1;
  double start = 0;
  gossip::AlgorithmStats before;
  const int total = s.warmup_iterations + s.iterations;
  for (int it = 0; it < total; ++it) {
    if (it == s.warmup_iterations) {
      start = runtime.now();
      before = algorithm->stats();
    }
    runtime.sleep_for(compute_s);
    if (s.local_step) {
      s.local_step(r, it, me.params);
    } else if (s.perturb) {
      perturb(me.params, noise);
    }
    algorithm->step(me.params);
    if (controller) controller->on_step(compute_s);
    if (s.flush_every > 0 && (it + 1) % s.flush_every == 0) algorithm->flush(me.params);
    if (s.after_step) s.after_step(r, it, runtime.now(), me.params);
  }
  const auto after = algorithm->stats();
  me.iteration_s = (runtime.now() - start) / s.iterations;
  me.wait_s = (after.wait_seconds - before.wait_seconds) / s.iterations;
  me.comm_s = (after.comm_seconds - before.comm_seconds) / s.iterations;
  algorithm->finish(me.params);
  if (controller) {
    me.period = algorithm->period();
    me.ratio = controller->current_ratio();
  }
}

// Times, overlap, traffic and the peers' consensus, into `result`.
void summarize(const GossipSetup& s, const std::vector<PeerOutcome>& peers, const NetworkModel& model,
               const std::vector<double>& initial_mean, GossipResult& result) {
  const int ranks = static_cast<int>(peers.size());
  std::vector<double> iteration(peers.size());
  for (std::size_t r = 0; r < peers.size(); ++r) {
    const auto& p = peers[r];
    iteration[r] = p.iteration_s;
    result.compute_s += s.profile.iteration_s() * s.cluster.slowdown(static_cast<int>(r));
    result.wait_s += p.wait_s;
    result.overlap_s += std::max(0.0, p.comm_s - p.wait_s);
  }
  for (double* v : {&result.compute_s, &result.wait_s, &result.overlap_s}) *v /= static_cast<double>(ranks);
  result.iteration_s = median(iteration);
  result.iteration_max_s = *std::max_element(iteration.begin(), iteration.end());
  if (result.iteration_s > 0) result.samples_per_s = ranks * s.profile.batch / result.iteration_s;
  result.speedup = result.samples_per_s / s.profile.single_gpu_samples_per_s;
  fill_traffic(model, s.warmup_iterations + s.iterations, result);

  auto [distance, mean] = consensus(peers);
  result.consensus_distance = distance;
  for (std::size_t i = 0; i < mean.size(); ++i)
    result.mean_drift = std::max(result.mean_drift, std::abs(mean[i] - initial_mean[i]));
  result.final_period = peers.front().period;
  result.final_ratio = peers.front().ratio;
  result.schedule_decisions = peers.front().decisions;
  result.schedule_reactions = peers.front().reactions;
}

}  // namespace

GossipResult run_gossip(const GossipSetup& s) {
  const auto host_start = std::chrono::steady_clock::now();
  const gossip::schedule::ScheduleConfig parsed = validate(s);
  const int ranks = s.cluster.gpus;
  const std::unique_ptr<gossip::Topology> topology = gossip::make_gossip_topology(s.options, ranks);
  const gossip::AlgorithmOptions options = [&] {
    gossip::AlgorithmOptions o = gossip::algorithm_options(s.options, parsed);
    o.timeout_s = s.timeout_s;
    return o;
  }();

  GossipResult result;
  result.byte_scale = s.profile.gradient_bytes() / (static_cast<double>(s.proxy) * sizeof(float));
  VirtualRuntime runtime;
  NetworkModel model(s.cluster);
  SimNetwork network(runtime, model, result.byte_scale);
  SimGather gather(runtime, ranks);
  std::vector<PeerOutcome> peers(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    peers[r].params = s.initial.empty() ? initial_params(s.options.seed, r, s.proxy) : s.initial;
  auto [initial_distance, initial_mean] = consensus(peers);
  result.initial_consensus_distance = initial_distance;

  std::optional<gossip::schedule::ScheduleConfig> schedule;
  if (parsed.mode == gossip::schedule::ScheduleMode::kAdaptive) {
    schedule = parsed;
    schedule->link.small_message_bytes /= result.byte_scale;
  }
  const SharedRun run{s, runtime, network, gather, topology.get(), options, schedule};
  for (int r = 0; r < ranks; ++r)
    runtime.spawn("rank " + std::to_string(r), [&run, &peers, r] { run_peer(run, r, peers[r]); });
  runtime.run();

  summarize(s, peers, model, initial_mean, result);
  result.virtual_seconds = runtime.now();
  result.thread_switches = runtime.switches();
  result.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
  return result;
}

}  // namespace murmur::sim::runtime
