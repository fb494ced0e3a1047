#include "gossip/topology/factory.h"

#include "gossip/topology/errors.h"
#include "gossip/topology/generators.h"
#include "gossip/topology/one_peer_exponential.h"
#include "gossip/topology/random_graphs.h"
#include "gossip/topology/topo_file.h"

namespace murmur::gossip {

const std::vector<std::string>& generator_names() {
  static const std::vector<std::string> names{
      "ring", "exponential", "one-peer-exponential", "erdos-renyi", "random", "torus", "hypercube", "star", "complete"};
  return names;
}

bool is_generator(const std::string& kind) {
  for (const auto& name : generator_names()) {
    if (name == kind) return true;
  }
  return false;
}

std::unique_ptr<Topology> make_topology(const TopologySpec& s) {
  const int n = s.nodes;
  auto fixed = [&](Graph g) { return std::make_unique<StaticTopology>(s.kind, std::move(g)); };
  if (s.kind == "ring") return fixed(ring(n));
  if (s.kind == "exponential") return fixed(exponential(n));
  if (s.kind == "one-peer-exponential") return std::make_unique<OnePeerExponential>(n);
  if (s.kind == "erdos-renyi") return fixed(erdos_renyi(n, s.probability, s.seed));
  if (s.kind == "random") return fixed(random_regular(n, s.degree, s.seed));
  if (s.kind == "torus") {
    if (s.rows > 0 || s.cols > 0) {
      if (s.rows <= 0 || s.cols <= 0) throw TopologyError("torus: give both rows and cols, or neither");
      return fixed(torus(s.rows, s.cols));
    }
    auto [rows, cols] = torus_shape(n);
    return fixed(torus(rows, cols));
  }
  if (s.kind == "hypercube") return fixed(hypercube(n));
  if (s.kind == "star") return fixed(star(n));
  if (s.kind == "complete") return fixed(complete(n));
  std::string known;
  for (const auto& name : generator_names()) known += (known.empty() ? "" : ", ") + name;
  throw TopologyError("unknown topology '" + s.kind + "' (known: " + known + ")");
}

std::unique_ptr<Topology> load_topology(const std::string& path) {
  return std::make_unique<StaticTopology>(path, read_topology_file(path));
}

}  // namespace murmur::gossip
