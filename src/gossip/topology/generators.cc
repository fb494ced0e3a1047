#include "gossip/topology/generators.h"

#include <string>

#include "gossip/topology/errors.h"

namespace murmur::gossip {

namespace {
void require_nodes(const char* what, int n, int at_least) {
  if (n < at_least) {
    throw TopologyError(std::string(what) + " needs at least " + std::to_string(at_least) + " nodes, got " +
                        std::to_string(n));
  }
}

void add_once(Graph& g, int a, int b) {
  if (a != b && !g.has_edge(a, b)) g.add_edge(a, b);
}
}  // namespace

Graph ring(int n) {
  require_nodes("ring", n, 2);
  Graph g(n, false);
  for (int i = 0; i < n; ++i) add_once(g, i, (i + 1) % n);
  return g;
}

Graph exponential(int n) {
  require_nodes("exponential", n, 2);
  Graph g(n, false);
  for (int i = 0; i < n; ++i) {
    for (long hop = 1; hop < n; hop *= 2) add_once(g, i, static_cast<int>((i + hop) % n));
  }
  return g;
}

std::pair<int, int> torus_shape(int n) {
  require_nodes("torus", n, 2);
  int rows = 1;
  for (int r = 1; static_cast<long>(r) * r <= n; ++r) {
    if (n % r == 0) rows = r;
  }
  return {rows, n / rows};
}

Graph torus(int rows, int cols) {
  if (rows < 1 || cols < 1 || static_cast<long>(rows) * cols < 2) {
    throw TopologyError("torus needs rows >= 1, cols >= 1 and at least 2 nodes, got " + std::to_string(rows) + " x " +
                        std::to_string(cols));
  }
  Graph g(rows * cols, false);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const int me = r * cols + c;
      add_once(g, me, ((r + 1) % rows) * cols + c);
      add_once(g, me, r * cols + (c + 1) % cols);
    }
  }
  return g;
}

Graph hypercube(int n) {
  if (n < 2 || (n & (n - 1)) != 0) {
    throw TopologyError("hypercube needs a power of two nodes (2, 4, 8, ...), got " + std::to_string(n));
  }
  Graph g(n, false);
  for (int i = 0; i < n; ++i) {
    for (int bit = 1; bit < n; bit <<= 1) add_once(g, i, i ^ bit);
  }
  return g;
}

Graph star(int n) {
  require_nodes("star", n, 2);
  Graph g(n, false);
  for (int i = 1; i < n; ++i) g.add_edge(0, i);
  return g;
}

Graph complete(int n) {
  require_nodes("complete", n, 2);
  Graph g(n, false);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) g.add_edge(i, j);
  }
  return g;
}

}  // namespace murmur::gossip
