#include "gossip/topology/view_topology.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "common/check.h"
#include "gossip/topology/errors.h"
#include "gossip/topology/factory.h"
#include "gossip/topology/graph_repair.h"
#include "gossip/topology/mixing.h"
#include "gossip/topology/spectral.h"

namespace murmur::gossip {

namespace {

// Lists longer than this are cut short in the description ("... and 12 more"):
// one log line per membership change, whatever the job's size.
constexpr std::size_t kListedAtMost = 8;

void check_live(const Topology& full, const std::vector<int>& live) {
  if (live.empty()) throw std::invalid_argument("topology_for_view: the view has no live nodes");
  for (std::size_t k = 0; k < live.size(); ++k) {
    if (live[k] < 0 || live[k] >= full.size()) {
      throw std::invalid_argument("topology_for_view: live[" + std::to_string(k) + "] = " + std::to_string(live[k]) +
                                  " is not a node of the job's topology " + full.name() + " (0.." +
                                  std::to_string(full.size() - 1) + ")");
    }
    if (k > 0 && live[k] <= live[k - 1]) {
      throw std::invalid_argument("topology_for_view: live nodes must be ascending and distinct, got live[" +
                                  std::to_string(k - 1) + "] = " + std::to_string(live[k - 1]) + ", live[" +
                                  std::to_string(k) + "] = " + std::to_string(live[k]));
    }
  }
}

// "view of 6 of 8 nodes (lost 3, 5)".
std::string view_summary(int job_nodes, const std::vector<int>& live) {
  std::ostringstream os;
  os << "view of " << live.size() << " of " << job_nodes << " nodes";
  std::vector<int> lost;
  std::size_t next = 0;
  for (int node = 0; node < job_nodes; ++node) {
    if (next < live.size() && live[next] == node) {
      ++next;
    } else {
      lost.push_back(node);
    }
  }
  if (lost.empty()) return os.str() + " (none lost)";
  os << " (lost ";
  for (std::size_t k = 0; k < lost.size() && k < kListedAtMost; ++k) os << (k ? ", " : "") << lost[k];
  if (lost.size() > kListedAtMost) os << " and " << lost.size() - kListedAtMost << " more";
  os << ")";
  return os.str();
}

// "2-3 (job nodes 2-4), ..." in view and job numbering.
std::string edge_list(const std::vector<std::pair<int, int>>& edges, const std::vector<int>& live, bool directed) {
  const char* arrow = directed ? "->" : "-";
  std::ostringstream os;
  for (std::size_t k = 0; k < edges.size() && k < kListedAtMost; ++k) {
    const auto [from, to] = edges[k];
    os << (k ? ", " : "") << from << arrow << to << " (job nodes " << live[from] << arrow << live[to] << ")";
  }
  if (edges.size() > kListedAtMost) os << " and " << edges.size() - kListedAtMost << " more";
  return os.str();
}

struct Rebuilt {
  std::unique_ptr<Topology> topology;
  std::vector<std::pair<int, int>> added_edges;
  std::string how;
};

// The job's graph cut down to `live` and reconnected (the rule for files).
Rebuilt cut_down(const Topology& full, const std::vector<int>& live) {
  MURMUR_CHECK(!full.time_varying());
  const Graph whole = full.at_round(0);
  Rebuilt out;
  if (static_cast<int>(live.size()) == whole.size()) {
    out.topology = std::make_unique<StaticTopology>(full.name(), whole);
    out.how = full.name() + " kept as it is";
    return out;
  }
  Graph graph = induced_subgraph(whole, live);
  const Reconnection mend = reconnect(graph);
  std::ostringstream os;
  os << full.name() << " cut down to the live nodes, " << to_string(default_scheme(graph)) << " weights";
  if (whole.weighted()) os << " (the graph's own weights dropped: they cannot survive a lost node)";
  if (mend.components > 1) {
    os << "; it fell apart into " << mend.components << " components, added " << mend.added.size()
       << (mend.added.size() == 1 ? " edge" : " edges");
    if (mend.added.size() == mend.fewest_possible) {
      os << " (the fewest possible)";
    } else {
      os << " (" << mend.fewest_possible << " would do: the cycle through the components is not minimal here)";
    }
    os << ": " << edge_list(mend.added, live, graph.directed());
  }
  out.topology = std::make_unique<StaticTopology>(full.name(), std::move(graph));
  out.added_edges = mend.added;
  out.how = os.str();
  return out;
}

// The job's spec on n nodes. A random regular graph's degree is lowered to the
// largest that exists on n nodes (d < n, n * d even); `note` says so.
TopologySpec view_spec(const GossipOptions& options, int n, std::string& note) {
  TopologySpec spec;
  spec.kind = options.topology;
  spec.nodes = n;
  spec.degree = options.topology_degree;
  spec.probability = options.topology_probability;
  spec.seed = options.topology_seed;
  if (spec.kind == "random" && spec.degree >= 2) {
    int degree = std::min(spec.degree, n - 1);
    if ((static_cast<long>(n) * degree) % 2 != 0) --degree;
    if (degree != spec.degree) {
      note = " (degree lowered from " + std::to_string(spec.degree) + " to " + std::to_string(degree) +
             ": a d-regular graph on " + std::to_string(n) + " nodes needs d < n and n * d even)";
      spec.degree = degree;
    }
  }
  return spec;
}

Rebuilt regenerate(const GossipOptions& options, const Topology& full, const std::vector<int>& live) {
  const int n = static_cast<int>(live.size());
  std::string note;
  const TopologySpec spec = view_spec(options, n, note);
  Rebuilt out;
  try {
    out.topology = make_topology(spec);
  } catch (const TopologyError& e) {
    if (full.time_varying()) throw;
    out = cut_down(full, live);
    out.how = options.topology + " cannot be made on " + std::to_string(n) + " nodes (" + e.what() + "); " + out.how;
    return out;
  }
  std::ostringstream os;
  os << options.topology << " regenerated on " << n << " nodes";
  if (spec.kind == "random" || spec.kind == "erdos-renyi") os << " with topology seed " << spec.seed;
  os << note << ", " << to_string(default_scheme(out.topology->at_round(0))) << " weights";
  out.how = os.str();
  return out;
}

double gap_of(const Topology& topology) {
  if (topology.size() > kSpectralGapMaxNodes) return std::numeric_limits<double>::quiet_NaN();
  return spectral_gap(mixing_matrix(topology.at_round(0)));
}

}  // namespace

ViewTopology topology_for_view(const GossipOptions& options, const Topology& full, const std::vector<int>& live) {
  check_live(full, live);
  Rebuilt rebuilt;
  if (live.size() == 1) {
    rebuilt.topology = std::make_unique<StaticTopology>(full.name(), Graph(1, full.at_round(0).directed()));
    rebuilt.how = "a single node: no edges, nothing to average";
  } else if (is_generator(options.topology)) {
    rebuilt = regenerate(options, full, live);
  } else {
    rebuilt = cut_down(full, live);
  }
  ViewTopology view;
  view.spectral_gap = gap_of(*rebuilt.topology);
  std::ostringstream os;
  os << view_summary(full.size(), live) << ": " << rebuilt.how;
  if (std::isnan(view.spectral_gap)) {
    os << "; spectral gap not computed above " << kSpectralGapMaxNodes << " nodes";
  } else {
    os << "; spectral gap " << view.spectral_gap;
    if (rebuilt.topology->time_varying()) os << " (round 0)";
  }
  view.topology = std::move(rebuilt.topology);
  view.added_edges = std::move(rebuilt.added_edges);
  view.description = os.str();
  return view;
}

}  // namespace murmur::gossip
