#include "tests/gossip/consensus_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "gossip/topology/factory.h"

namespace murmur::testing {

std::vector<float> initial_vector(std::uint64_t seed, int rank, std::size_t n) {
  std::mt19937_64 rng(seed * 1000003ULL + static_cast<std::uint64_t>(rank));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = uniform(rng);
  return v;
}

ConsensusResult run_consensus(const ConsensusSpec& spec, gossip::Communicator& comm) {
  const int p = comm.size();
  const int me = comm.rank();
  const std::size_t n = spec.elements;
  std::unique_ptr<gossip::Topology> topology;
  if (!spec.topology.empty() && spec.topology != "none") {
    gossip::TopologySpec ts;
    ts.kind = spec.topology;
    ts.nodes = p;
    ts.seed = spec.topology_seed;
    ts.degree = spec.degree;
    topology = gossip::make_topology(ts);
  }
  auto algo = gossip::make_algorithm(spec.algorithm, spec.options, comm, topology.get());

  // What every rank can compute from the seeds.
  std::vector<double> sum(n, 0.0);
  double max_dev = 0;
  std::vector<std::vector<float>> all;
  for (int r = 0; r < p; ++r) {
    all.push_back(initial_vector(spec.seed, r, n));
    for (std::size_t i = 0; i < n; ++i) sum[i] += all.back()[i];
  }
  std::vector<double> mean(n);
  for (std::size_t i = 0; i < n; ++i) mean[i] = sum[i] / p;
  for (int r = 0; r < p; ++r) {
    double d = 0;
    for (std::size_t i = 0; i < n; ++i) d += (all[r][i] - mean[i]) * (all[r][i] - mean[i]);
    max_dev = std::max(max_dev, std::sqrt(d));
  }

  ConsensusResult res;
  std::vector<float> x = all[me];
  std::vector<double> target = mean;
  if (spec.mode == "consensus" || spec.mode == "sum") {
    for (int t = 0; t < spec.steps; ++t) algo->step(x);
    algo->finish(x);
    if (spec.mode == "sum") target = sum;
  } else if (spec.mode == "ef") {
    // Sparse S-SGD on a model: rank r starts at v_r and adds the update v_r
    // before every step. The model all ranks hold after T steps has moved
    // from the mean of the starts by the compressed updates, which add up to
    // T sum_r v_r less what the residuals still hold.
    for (int t = 0; t < spec.steps; ++t) {
      for (std::size_t i = 0; i < n; ++i) x[i] += all[me][i];
      algo->step(x);
      algo->flush(x);
    }
    algo->finish(x);
    const double scale = spec.options.average ? p : 1.0;
    double gap = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double start = spec.options.average ? mean[i] : sum[i];
      double d = scale * (x[i] - start) - spec.steps * sum[i];
      gap += d * d;
    }
    res.ef_gap = std::sqrt(gap);
    for (std::size_t i = 0; i < n; ++i) target[i] = mean[i] * (1 + spec.steps);
  } else if (spec.mode == "drift") {
    // Closed form: every H-th step all ranks hold the mean; in between each
    // adds its own drift. max_error tracks the worst step.
    const int h = spec.options.period;
    const double mean_drift = 0.01 * (p + 1) / 2.0;            // the mean of 0.01 (r + 1)
    std::vector<double> base(all[me].begin(), all[me].end());  // own value at the last average
    int last = 0;
    double worst = 0;
    for (int t = 1; t <= spec.steps; ++t) {
      for (auto& v : x) v += 0.01f * static_cast<float>(me + 1);
      algo->step(x);
      const bool averaged = t % h == 0;
      for (std::size_t i = 0; i < n; ++i) {
        // Averaging preserves the mean, which drifts by mean_drift per step.
        double want = averaged ? mean[i] + t * mean_drift : base[i] + (t - last) * 0.01 * (me + 1);
        worst = std::max(worst, std::abs(x[i] - want));
        if (averaged) base[i] = want;
      }
      if (averaged) last = t;
    }
    algo->finish(x);
    res.max_error = worst;
    res.stats = algo->stats();
    double cs = 0;
    for (float v : x) cs += v;
    res.checksum = cs;
    return res;
  } else {
    throw std::invalid_argument("unknown mode " + spec.mode);
  }
  double dev = 0, worst = 0, cs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double d = x[i] - target[i];
    worst = std::max(worst, std::abs(d));
    double dm = x[i] - mean[i];
    dev += dm * dm;
    cs += x[i];
  }
  res.max_error = worst;
  res.rel_error = std::sqrt(dev) / max_dev;
  res.checksum = cs;
  res.stats = algo->stats();
  res.weight = res.stats.push_sum_weight;
  res.residual = res.stats.residual_norm;
  return res;
}

std::string format_result(int rank, const ConsensusResult& r) {
  std::uint64_t sent = 0, received = 0;
  for (const auto& [peer, l] : r.stats.links) {
    sent += l.bytes_sent;
    received += l.bytes_received;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "result rank=%d max_error=%.9g rel_error=%.9g weight=%.17g residual=%.9g ef_gap=%.9g "
                "checksum=%.17g rounds=%llu served=%llu crossings=%llu bytes_sent=%llu bytes_received=%llu wait_s=%.4f",
                rank, r.max_error, r.rel_error, r.weight, r.residual, r.ef_gap, r.checksum,
                static_cast<unsigned long long>(r.stats.rounds), static_cast<unsigned long long>(r.stats.served),
                static_cast<unsigned long long>(r.stats.crossings), static_cast<unsigned long long>(sent),
                static_cast<unsigned long long>(received), r.stats.wait_seconds);
  return line;
}

}  // namespace murmur::testing
