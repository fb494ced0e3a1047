#include "gossip/topology/topo_file.h"

#include <cmath>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/line_reader.h"
#include "gossip/topology/errors.h"
#include "gossip/topology/metrics.h"

namespace murmur::gossip {

namespace {
constexpr double kSumTolerance = 1e-9;
constexpr LineFormat kTopologyFormat{.comment = '#', .raise = &raise_as<TopologyError>};

class Parser {
 public:
  explicit Parser(const LineReader& reader) : reader_(reader) {}

  // Through the reader: TopologyError(path, line, reason), as kTopologyFormat says.
  [[noreturn]] void fail(int line, const std::string& reason) const { reader_.fail(line, reason); }

  // The words of one line that carries something.
  void parse_line(const std::vector<std::string>& t, int line) {
    if (t[0] == "nodes") return parse_nodes(t, line);
    if (t[0] == "directed" || t[0] == "undirected") return parse_direction(t, line);
    if (t[0] == "self") return parse_self(t, line);
    if (t.size() >= 2 && t.size() <= 4 && is_integer(t[0]) && is_integer(t[1])) {
      return parse_edge(t, line);
    }
    fail(line, fmt::format("cannot read '{}'; expected 'nodes N', 'directed', 'undirected', 'self NODE WEIGHT' or "
                           "'A B [WEIGHT] [class=NAME]'",
                           fmt::join(t, " ")));
  }

  Graph finish(int last_line) {
    if (!graph_) fail(last_line, "no 'nodes N' line; a graph file starts with its node count");
    if (!direction_seen_) fail(nodes_line_, "say 'directed' or 'undirected' after 'nodes N'");
    Graph& g = *graph_;
    if (g.partly_weighted()) {
      if (first_unweighted_line_ > first_weighted_line_) {
        fail(first_unweighted_line_,
             fmt::format("this edge has no weight but the edge on line {} has one; give every edge a weight or none",
                         first_weighted_line_));
      }
      fail(first_weighted_line_,
           fmt::format("this edge has a weight but the edge on line {} has none; give every edge a weight or none",
                       first_unweighted_line_));
    }
    if (!g.weighted() && first_self_line_ > 0) {
      fail(first_self_line_, "a self weight needs weights on the edges too");
    }
    if (g.weighted()) check_sums(g);
    if (auto lost = unreachable_node(g)) {
      fail(nodes_line_, g.directed()
                            ? fmt::format("graph is not strongly connected: node {} and node 0 do not "
                                          "reach each other both ways",
                                          *lost)
                            : fmt::format("graph is not connected: node {} cannot be reached from node 0", *lost));
    }
    return std::move(*graph_);
  }

 private:
  static bool is_integer(const std::string& s) {
    long v;
    return parse_number(s, v);
  }

  void parse_nodes(const std::vector<std::string>& t, int line) {
    if (graph_) fail(line, fmt::format("'nodes' given twice (first on line {})", nodes_line_));
    long n = 0;
    if (t.size() != 2 || !parse_number(t[1], n) || n < 1 || n > 1000000) {
      fail(line, "expected 'nodes N' with N a whole number from 1 to 1000000");
    }
    nodes_ = static_cast<int>(n);
    nodes_line_ = line;
    graph_.emplace(nodes_, directed_);
    last_line_of_.assign(static_cast<std::size_t>(nodes_), line);
    self_line_of_.assign(static_cast<std::size_t>(nodes_), 0);
  }

  void parse_direction(const std::vector<std::string>& t, int line) {
    if (t.size() != 1) fail(line, fmt::format("'{}' takes no arguments", t[0]));
    if (direction_seen_) fail(line, "'directed' or 'undirected' given twice");
    if (graph_ && graph_->edge_count() > 0) fail(line, fmt::format("'{}' must come before the edges", t[0]));
    direction_seen_ = true;
    directed_ = t[0] == "directed";
    if (graph_) graph_.emplace(nodes_, directed_);
  }

  void require_header(int line) {
    if (!graph_) fail(line, "'nodes N' must come before the edges");
    if (!direction_seen_) fail(line, "'directed' or 'undirected' must come before the edges");
  }

  int node(const std::string& s, int line) const {
    long v = 0;
    if (!parse_number(s, v)) fail(line, fmt::format("'{}' is not a node number", s));
    if (v < 0 || v >= nodes_) fail(line, fmt::format("unknown node {} (nodes are 0..{})", s, nodes_ - 1));
    return static_cast<int>(v);
  }

  double weight(const std::string& s, int line) const {
    double v = 0.0;
    if (!parse_number(s, v)) fail(line, fmt::format("weight '{}' is not a number", s));
    if (v < 0) fail(line, fmt::format("negative weight {}; mixing weights are between 0 and 1", s));
    if (v > 1) fail(line, fmt::format("weight {} is above 1; mixing weights are between 0 and 1", s));
    return v;
  }

  void parse_self(const std::vector<std::string>& t, int line) {
    require_header(line);
    if (t.size() != 3) fail(line, "expected 'self NODE WEIGHT'");
    const int i = node(t[1], line);
    const double w = weight(t[2], line);
    if (self_line_of_[i] > 0) {
      fail(line, fmt::format("self weight of node {} given twice (first on line {})", t[1], self_line_of_[i]));
    }
    graph_->set_self_weight(i, w);
    self_line_of_[i] = line;
    if (first_self_line_ == 0) first_self_line_ = line;
  }

  void parse_edge(const std::vector<std::string>& t, int line) {
    require_header(line);
    const int a = node(t[0], line);
    const int b = node(t[1], line);
    if (a == b) {
      fail(line, fmt::format("self loop {} {}; write 'self {} WEIGHT' for a self weight", t[0], t[1], t[0]));
    }
    double w = kNoWeight;
    std::string label;
    for (std::size_t k = 2; k < t.size(); ++k) {
      if (t[k].rfind("class=", 0) == 0) {
        if (!label.empty() || t[k].size() == 6) fail(line, "expected one 'class=NAME'");
        label = t[k].substr(6);
      } else if (std::isnan(w) && label.empty()) {
        w = weight(t[k], line);
      } else {
        fail(line, fmt::format("unexpected '{}'; an edge is 'A B [WEIGHT] [class=NAME]'", t[k]));
      }
    }
    std::pair<int, int> key{a, b};
    if (!directed_ && a > b) key = {b, a};
    auto [it, fresh] = edge_lines_.emplace(key, line);
    if (!fresh) {
      fail(line, fmt::format("duplicate edge {} {} (first on line {})", t[0], t[1], it->second));
    }
    graph_->add_edge(a, b, w, std::move(label));
    last_line_of_[a] = last_line_of_[b] = line;
    int& first = std::isnan(w) ? first_unweighted_line_ : first_weighted_line_;
    if (first == 0) first = line;
  }

  void check_sums(const Graph& g) const {
    for (int i = 0; i < g.size(); ++i) {
      double off = 0.0;
      for (const Link& l : g.out(i)) off += l.weight;
      const double self = g.self_weight(i);
      const std::string whose =
          g.directed() ? fmt::format("the weights node {} sends", i) : fmt::format("the weights of node {}", i);
      const std::string rule = g.directed() ? "each column of a push-sum matrix must sum to 1"
                                            : "each row of the mixing matrix must sum to 1";
      if (!std::isnan(self)) {
        const double sum = off + self;
        if (std::abs(sum - 1.0) > kSumTolerance) {
          fail(self_line_of_[i],
               fmt::format("{} (self included) sum to {:.12g}, not 1; {} within 1e-9", whose, sum, rule));
        }
      } else if (off > 1.0 + kSumTolerance) {
        fail(last_line_of_[i], fmt::format("{} sum to {:.12g}, above 1; {} within 1e-9", whose, off, rule));
      }
    }
  }

  const LineReader& reader_;
  std::optional<Graph> graph_;
  int nodes_ = 0;
  int nodes_line_ = 0;
  bool directed_ = false;
  bool direction_seen_ = false;
  int first_weighted_line_ = 0;
  int first_unweighted_line_ = 0;
  int first_self_line_ = 0;
  std::vector<int> last_line_of_;  // last edge line that touches each node
  std::vector<int> self_line_of_;
  std::map<std::pair<int, int>, int> edge_lines_;
};
}  // namespace

namespace {
Graph parse(LineReader& reader) {
  Parser parser(reader);
  for (Line line; reader.next(line);) parser.parse_line(line.words(), line.number);
  return parser.finish(reader.lines_read() == 0 ? 1 : reader.lines_read());
}
}  // namespace

Graph parse_topology(std::istream& in, const std::string& path) {
  LineReader reader = LineReader::from_stream(in, path, kTopologyFormat);
  return parse(reader);
}

Graph read_topology_file(const std::string& path) {
  LineReader reader = LineReader::from_file(path, "cannot open the topology file", kTopologyFormat);
  return parse(reader);
}

}  // namespace murmur::gossip
