#include "gossip/topology/random_graphs.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/log.h"
#include "gossip/topology/errors.h"
#include "gossip/topology/metrics.h"

namespace murmur::gossip {

namespace {
constexpr int kMaxDraws = 1000;

// Uniform in [0, 1) from the top 53 bits.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Uniform in [0, bound) without modulo bias.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  std::uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % bound;
}

// One pairing attempt; false when it got stuck.
bool try_pairing(Graph& g, int n, int degree, std::mt19937_64& rng) {
  std::vector<int> stubs;
  stubs.reserve(static_cast<std::size_t>(n) * degree);
  for (int i = 0; i < n; ++i) stubs.insert(stubs.end(), static_cast<std::size_t>(degree), i);
  while (!stubs.empty()) {
    bool paired = false;
    for (int attempt = 0; attempt < 64 && !paired; ++attempt) {
      const std::size_t x = uniform_below(rng, stubs.size());
      const std::size_t y = uniform_below(rng, stubs.size());
      const int a = stubs[x];
      const int b = stubs[y];
      if (x == y || a == b || g.has_edge(a, b)) continue;
      g.add_edge(a, b);
      // Remove the larger index first so the smaller stays valid.
      for (std::size_t idx : {std::max(x, y), std::min(x, y)}) {
        stubs[idx] = stubs.back();
        stubs.pop_back();
      }
      paired = true;
    }
    if (!paired) return false;
  }
  return true;
}
}  // namespace

Graph erdos_renyi(int n, double p, std::uint64_t seed) {
  if (n < 2) throw TopologyError("erdos-renyi needs at least 2 nodes, got " + std::to_string(n));
  if (!(p > 0.0 && p <= 1.0)) {
    throw TopologyError("erdos-renyi needs 0 < p <= 1, got p = " + std::to_string(p));
  }
  std::mt19937_64 rng(seed);
  for (int draw = 1; draw <= kMaxDraws; ++draw) {
    Graph g(n, false);
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        if (uniform01(rng) < p) g.add_edge(i, j);
      }
    }
    if (connected(g)) {
      if (draw > 1) gossip_log().debug("erdos-renyi: connected graph on draw {}", draw);
      return g;
    }
  }
  std::ostringstream os;
  os << "erdos-renyi G(" << n << ", " << p << ") stayed disconnected in " << kMaxDraws
     << " draws; raise p above the connectivity threshold ln(n)/n = " << std::log(n) / n;
  throw TopologyError(os.str());
}

Graph random_regular(int n, int degree, std::uint64_t seed) {
  const std::string what = "random " + std::to_string(degree) + "-regular graph on " + std::to_string(n) + " nodes";
  if (n < 2) throw TopologyError(what + ": needs at least 2 nodes");
  if (degree < 1 || degree >= n) {
    throw TopologyError(what + ": the degree must be between 1 and n - 1 = " + std::to_string(n - 1));
  }
  if ((static_cast<long>(n) * degree) % 2 != 0) {
    throw TopologyError(what + " cannot exist: n * degree must be even");
  }
  if (degree == 1 && n > 2) {
    throw TopologyError(what + " cannot be connected (it is a matching); use degree >= 2");
  }
  std::mt19937_64 rng(seed);
  for (int draw = 1; draw <= kMaxDraws; ++draw) {
    Graph g(n, false);
    if (try_pairing(g, n, degree, rng) && connected(g)) {
      if (draw > 1) gossip_log().debug("random-regular: connected graph on draw {}", draw);
      return g;
    }
  }
  throw TopologyError(what + ": no connected graph in " + std::to_string(kMaxDraws) +
                      " draws; try another seed or degree");
}

}  // namespace murmur::gossip
