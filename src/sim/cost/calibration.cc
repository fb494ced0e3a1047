#include "sim/cost/calibration.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <sstream>

#include "sim/cost/network_preset.h"

namespace murmur::sim::cost {

namespace {

// Shi et al., arXiv 2005.13247, raw results of HKBU-HPML/ddl-benchmarks
// (results/2020-05-29): ResNet-50, batch 64 per GPU, samples/s, mean of 5.
struct RawCell {
  const char* network;
  PaperMethod method;
  int gpus;
  double samples_per_s;
};

constexpr RawCell kResNet50Cells[] = {
    {"10gbe-tcp", PaperMethod::kBspA2A, 4, 925.02},
    {"10gbe-tcp", PaperMethod::kBspA2A, 8, 1282.28},
    {"10gbe-tcp", PaperMethod::kBspA2A, 16, 2485.12},
    {"10gbe-tcp", PaperMethod::kBspA2A, 32, 4920.82},
    {"10gbe-tcp", PaperMethod::kWfbpA2A, 4, 1015.4},
    {"10gbe-tcp", PaperMethod::kWfbpA2A, 8, 1795.74},
    {"10gbe-tcp", PaperMethod::kWfbpA2A, 16, 3146.78},
    {"10gbe-tcp", PaperMethod::kWfbpA2A, 32, 5113.18},
    {"10gbe-tcp", PaperMethod::kMgWfbp, 4, 1003.18},
    {"10gbe-tcp", PaperMethod::kMgWfbp, 8, 1980.58},
    {"10gbe-tcp", PaperMethod::kMgWfbp, 16, 3784.98},
    {"10gbe-tcp", PaperMethod::kMgWfbp, 32, 6883.6},
    {"10gbe-tcp", PaperMethod::kByteSchedulerA2A, 4, 658.12},
    {"10gbe-tcp", PaperMethod::kByteSchedulerA2A, 8, 1319.1},
    {"10gbe-tcp", PaperMethod::kByteSchedulerA2A, 16, 2701.52},
    {"10gbe-tcp", PaperMethod::kByteSchedulerA2A, 32, 4754.26},
    {"10gbe-tcp", PaperMethod::kBspPs, 4, 866.3},
    {"10gbe-tcp", PaperMethod::kBspPs, 8, 1194.44},
    {"10gbe-tcp", PaperMethod::kBspPs, 16, 2361.27},
    {"10gbe-tcp", PaperMethod::kBspPs, 32, 4376.578},
    {"10gbe-tcp", PaperMethod::kWfbpPs, 4, 1017.32},
    {"10gbe-tcp", PaperMethod::kWfbpPs, 8, 2021.44},
    {"10gbe-tcp", PaperMethod::kWfbpPs, 16, 3811.965},
    {"10gbe-tcp", PaperMethod::kWfbpPs, 32, 6945.39},
    {"10gbe-tcp", PaperMethod::kByteSchedulerPs, 4, 1018.4},
    {"10gbe-tcp", PaperMethod::kByteSchedulerPs, 8, 2025.62},
    {"10gbe-tcp", PaperMethod::kByteSchedulerPs, 16, 3815.625},
    {"10gbe-tcp", PaperMethod::kByteSchedulerPs, 32, 6888.995},
    {"100gb-ib-rdma", PaperMethod::kBspA2A, 4, 920.28},
    {"100gb-ib-rdma", PaperMethod::kBspA2A, 8, 1821.2},
    {"100gb-ib-rdma", PaperMethod::kBspA2A, 16, 3602.9},
    {"100gb-ib-rdma", PaperMethod::kBspA2A, 32, 7126.52},
    {"100gb-ib-rdma", PaperMethod::kWfbpA2A, 4, 1014.28},
    {"100gb-ib-rdma", PaperMethod::kWfbpA2A, 8, 2017.12},
    {"100gb-ib-rdma", PaperMethod::kWfbpA2A, 16, 3946.06},
    {"100gb-ib-rdma", PaperMethod::kWfbpA2A, 32, 7326.56},
    {"100gb-ib-rdma", PaperMethod::kMgWfbp, 4, 1003.9},
    {"100gb-ib-rdma", PaperMethod::kMgWfbp, 8, 2001.72},
    {"100gb-ib-rdma", PaperMethod::kMgWfbp, 16, 3987.4},
    {"100gb-ib-rdma", PaperMethod::kMgWfbp, 32, 7876.46},
    {"100gb-ib-rdma", PaperMethod::kByteSchedulerA2A, 4, 653.8},
    {"100gb-ib-rdma", PaperMethod::kByteSchedulerA2A, 8, 1257.66},
    {"100gb-ib-rdma", PaperMethod::kByteSchedulerA2A, 16, 2529.14},
    {"100gb-ib-rdma", PaperMethod::kByteSchedulerA2A, 32, 4766.38},
    {"100gb-ib-rdma", PaperMethod::kBspPs, 4, 862.96},
    {"100gb-ib-rdma", PaperMethod::kBspPs, 8, 1694.9},
    {"100gb-ib-rdma", PaperMethod::kBspPs, 16, 3353.225},
    {"100gb-ib-rdma", PaperMethod::kBspPs, 32, 6587.627},
    {"100gb-ib-rdma", PaperMethod::kWfbpPs, 4, 1010.8},
    {"100gb-ib-rdma", PaperMethod::kWfbpPs, 8, 2008.088},
    {"100gb-ib-rdma", PaperMethod::kWfbpPs, 16, 3988.67},
    {"100gb-ib-rdma", PaperMethod::kWfbpPs, 32, 7977.785},
    {"100gb-ib-rdma", PaperMethod::kByteSchedulerPs, 4, 1015.82},
    {"100gb-ib-rdma", PaperMethod::kByteSchedulerPs, 8, 2018.39},
    {"100gb-ib-rdma", PaperMethod::kByteSchedulerPs, 16, 4013.88},
    {"100gb-ib-rdma", PaperMethod::kByteSchedulerPs, 32, 7999.83},
    {"100gbe-tcp", PaperMethod::kBspA2A, 4, 926.0},
    {"100gbe-tcp", PaperMethod::kBspA2A, 8, 1601.36},
    {"100gbe-tcp", PaperMethod::kBspA2A, 16, 3087.16},
    {"100gbe-tcp", PaperMethod::kBspA2A, 32, 5744.76},
    {"100gbe-tcp", PaperMethod::kWfbpA2A, 4, 1015.1},
    {"100gbe-tcp", PaperMethod::kWfbpA2A, 8, 1985.74},
    {"100gbe-tcp", PaperMethod::kWfbpA2A, 16, 3650.74},
    {"100gbe-tcp", PaperMethod::kWfbpA2A, 32, 6141.38},
    {"100gbe-tcp", PaperMethod::kMgWfbp, 4, 1002.68},
    {"100gbe-tcp", PaperMethod::kMgWfbp, 8, 1990.68},
    {"100gbe-tcp", PaperMethod::kMgWfbp, 16, 3945.96},
    {"100gbe-tcp", PaperMethod::kMgWfbp, 32, 7540.94},
    {"100gbe-tcp", PaperMethod::kByteSchedulerA2A, 4, 728.52},
    {"100gbe-tcp", PaperMethod::kByteSchedulerA2A, 8, 1344.3},
    {"100gbe-tcp", PaperMethod::kByteSchedulerA2A, 16, 2687.68},
    {"100gbe-tcp", PaperMethod::kByteSchedulerA2A, 32, 5104.06},
    {"100gbe-tcp", PaperMethod::kBspPs, 4, 864.14},
    {"100gbe-tcp", PaperMethod::kBspPs, 8, 1191.65},
    {"100gbe-tcp", PaperMethod::kBspPs, 16, 2353.15},
    {"100gbe-tcp", PaperMethod::kBspPs, 32, 4355.977},
    {"100gbe-tcp", PaperMethod::kWfbpPs, 4, 1014.78},
    {"100gbe-tcp", PaperMethod::kWfbpPs, 8, 2002.06},
    {"100gbe-tcp", PaperMethod::kWfbpPs, 16, 3811.35},
    {"100gbe-tcp", PaperMethod::kWfbpPs, 32, 6933.738},
    {"100gbe-tcp", PaperMethod::kByteSchedulerPs, 4, 1015.06},
    {"100gbe-tcp", PaperMethod::kByteSchedulerPs, 8, 2017.66},
    {"100gbe-tcp", PaperMethod::kByteSchedulerPs, 16, 3996.03},
    {"100gbe-tcp", PaperMethod::kByteSchedulerPs, 32, 7982.248},
};

}  // namespace

const std::vector<ReferenceCell>& resnet50_reference() {
  static const std::vector<ReferenceCell> cells = [] {
    std::vector<ReferenceCell> v;
    for (const RawCell& c : kResNet50Cells) v.push_back({c.network, c.method, c.gpus, c.samples_per_s});
    return v;
  }();
  return cells;
}

std::vector<CellComparison> compare_with_reference(const ModelProfile& resnet50, const PaperConstants& constants) {
  std::vector<CellComparison> out;
  for (const ReferenceCell& cell : resnet50_reference()) {
    ClusterSpec cluster;
    cluster.gpus = cell.gpus;
    cluster.gpus_per_node = 4;
    apply_network_preset(cluster, cell.network);
    CellComparison c{cell, predict_paper_method(cell.method, resnet50, cluster, constants), 0};
    c.relative_error = (c.predicted.samples_per_s - cell.samples_per_s) / cell.samples_per_s;
    out.push_back(c);
  }
  return out;
}

namespace {

// The fitted constants as one vector of logarithms, and back.
std::vector<double*> fields(PaperConstants& c) {
  std::vector<double*> f = {
      &c.intra_ring_bandwidth_Bps, &c.intra_ring_step_s,  &c.horovod_op_s, &c.ps_local_bandwidth_Bps,
      &c.ps_partition_s,           &c.bytescheduler_op_s, &c.overlap_share};
  for (auto& [name, stack] : c.networks) {
    f.push_back(&stack.ring_bandwidth_Bps);
    f.push_back(&stack.ring_step_s);
    f.push_back(&stack.ps_bandwidth_Bps);
    f.push_back(&stack.ps_connection_Bps);
  }
  return f;
}

std::vector<double> to_logs(PaperConstants c) {
  std::vector<double> x;
  for (double* f : fields(c)) x.push_back(std::log(*f));
  return x;
}

PaperConstants from_logs(const PaperConstants& shape, const std::vector<double>& x) {
  PaperConstants c = shape;
  std::vector<double*> f = fields(c);
  for (std::size_t i = 0; i < f.size(); ++i) *f[i] = std::exp(x[i]);
  return c;
}

// A soft maximum of the relative errors: the L8 norm.
double objective(const ModelProfile& profile, const PaperConstants& constants) {
  double sum = 0;
  for (const CellComparison& c : compare_with_reference(profile, constants)) sum += std::pow(c.relative_error, 16);
  return std::pow(sum / static_cast<double>(resnet50_reference().size()), 1.0 / 16);
}

// Nelder-Mead on f from x0 with initial steps `step`; returns the best point.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                                double step, int max_evaluations, int& evaluations) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> simplex(n + 1, x0);
  for (std::size_t i = 0; i < n; ++i) simplex[i + 1][i] += step;
  std::vector<double> values;
  for (const auto& p : simplex) values.push_back(f(p)), ++evaluations;
  auto point = [&](const std::vector<double>& a, const std::vector<double>& b, double t) {
    std::vector<double> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = a[i] + t * (b[i] - a[i]);
    return p;
  };
  while (evaluations < max_evaluations) {
    std::vector<std::size_t> order(n + 1);
    for (std::size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (values[worst] - values[best] < 1e-9) break;
    std::vector<double> centroid(n, 0.0);
    for (std::size_t i = 0; i <= n; ++i)
      if (i != worst)
        for (std::size_t d = 0; d < n; ++d) centroid[d] += simplex[i][d] / static_cast<double>(n);
    const std::vector<double> reflected = point(centroid, simplex[worst], -1.0);
    const double fr = f(reflected);
    ++evaluations;
    if (fr < values[best]) {
      const std::vector<double> expanded = point(centroid, simplex[worst], -2.0);
      const double fe = f(expanded);
      ++evaluations;
      if (fe < fr)
        simplex[worst] = expanded, values[worst] = fe;
      else
        simplex[worst] = reflected, values[worst] = fr;
    } else if (fr < values[second]) {
      simplex[worst] = reflected, values[worst] = fr;
    } else {
      const std::vector<double> contracted = point(centroid, simplex[worst], 0.5);
      const double fc = f(contracted);
      ++evaluations;
      if (fc < values[worst]) {
        simplex[worst] = contracted, values[worst] = fc;
      } else {
        for (std::size_t i = 0; i <= n; ++i)
          if (i != best) simplex[i] = point(simplex[best], simplex[i], 0.5), values[i] = f(simplex[i]), ++evaluations;
      }
    }
  }
  return simplex[static_cast<std::size_t>(std::min_element(values.begin(), values.end()) - values.begin())];
}

}  // namespace

FitResult fit_constants(const ModelProfile& resnet50, const PaperConstants& start, int max_evaluations) {
  FitResult result;
  auto f = [&](const std::vector<double>& x) { return objective(resnet50, from_logs(start, x)); };
  std::vector<double> x = to_logs(start);
  // Restarts from the best point with shrinking simplices escape the
  // degenerate simplices Nelder-Mead collapses into on a minimax surface.
  for (double step : {0.5, 0.25, 0.1, 0.05, 0.02}) {
    const int budget = result.evaluations + max_evaluations / 5;
    x = nelder_mead(f, x, step, budget, result.evaluations);
  }
  result.constants = from_logs(start, x);
  std::vector<double> errors;
  for (const CellComparison& c : compare_with_reference(resnet50, result.constants))
    errors.push_back(std::abs(c.relative_error));
  std::sort(errors.begin(), errors.end());
  result.max_abs_error = errors.back();
  result.median_abs_error = errors[errors.size() / 2];
  return result;
}

std::string constants_as_source(const PaperConstants& c) {
  std::ostringstream out;
  out.precision(4);
  out << "  PaperConstants c;\n";
  for (const auto& [name, s] : c.networks)
    out << "  c.networks[\"" << name << "\"] = {" << s.ring_bandwidth_Bps << ", " << s.ring_step_s << ", "
        << s.ps_bandwidth_Bps << ", " << s.ps_connection_Bps << "};\n";
  out << "  c.intra_ring_bandwidth_Bps = " << c.intra_ring_bandwidth_Bps << ";\n"
      << "  c.intra_ring_step_s = " << c.intra_ring_step_s << ";\n"
      << "  c.horovod_op_s = " << c.horovod_op_s << ";\n"
      << "  c.ps_local_bandwidth_Bps = " << c.ps_local_bandwidth_Bps << ";\n"
      << "  c.ps_partition_s = " << c.ps_partition_s << ";\n"
      << "  c.bytescheduler_op_s = " << c.bytescheduler_op_s << ";\n"
      << "  c.overlap_share = " << c.overlap_share << ";\n";
  return out.str();
}

const PaperConstants& calibrated_constants() {
  static const PaperConstants constants = [] {
    PaperConstants c;
    c.networks["100gb-ib-rdma"] = {2.845e+09, 7.553e-06, 1.269e+10, 1.748e+10};
    c.networks["100gbe-tcp"] = {2.698e+09, 1.774e-05, 9.862e+08, 7.106e+08};
    c.networks["10gbe-tcp"] = {1.64e+09, 1.962e-05, 9.617e+08, 7.14e+08};
    c.intra_ring_bandwidth_Bps = 3.247e+09;
    c.intra_ring_step_s = 9.353e-05;
    c.horovod_op_s = 3.022e-05;
    c.ps_local_bandwidth_Bps = 2.847e+09;
    c.ps_partition_s = 0.0002911;
    c.bytescheduler_op_s = 0.001766;
    c.overlap_share = 0.7288;
    return c;
  }();
  return constants;
}

}  // namespace murmur::sim::cost
