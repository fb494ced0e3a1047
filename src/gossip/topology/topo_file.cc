#include "gossip/topology/topo_file.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "gossip/topology/errors.h"
#include "gossip/topology/metrics.h"

namespace murmur::gossip {

namespace {
constexpr double kSumTolerance = 1e-9;

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(int line, const std::string& reason) const {
    throw TopologyError(path_ + ":" + std::to_string(line) + ": " + reason);
  }

  void parse_line(const std::string& raw, int line) {
    std::istringstream in(raw.substr(0, raw.find('#')));
    std::vector<std::string> t;
    for (std::string word; in >> word;) t.push_back(word);
    if (t.empty()) return;
    if (t[0] == "nodes") return parse_nodes(t, line);
    if (t[0] == "directed" || t[0] == "undirected") return parse_direction(t, line);
    if (t[0] == "self") return parse_self(t, line);
    if (t.size() >= 2 && t.size() <= 4 && is_integer(t[0]) && is_integer(t[1])) {
      return parse_edge(t, line);
    }
    fail(line, "cannot read '" + join(t) +
                   "'; expected 'nodes N', 'directed', 'undirected', 'self NODE WEIGHT' or "
                   "'A B [WEIGHT] [class=NAME]'");
  }

  Graph finish(int last_line) {
    if (!graph_) fail(last_line, "no 'nodes N' line; a graph file starts with its node count");
    if (!direction_seen_) fail(nodes_line_, "say 'directed' or 'undirected' after 'nodes N'");
    Graph& g = *graph_;
    if (g.partly_weighted()) {
      if (first_unweighted_line_ > first_weighted_line_) {
        fail(first_unweighted_line_, "this edge has no weight but the edge on line " +
                                         std::to_string(first_weighted_line_) +
                                         " has one; give every edge a weight or none");
      }
      fail(first_weighted_line_, "this edge has a weight but the edge on line " +
                                     std::to_string(first_unweighted_line_) +
                                     " has none; give every edge a weight or none");
    }
    if (!g.weighted() && first_self_line_ > 0) {
      fail(first_self_line_, "a self weight needs weights on the edges too");
    }
    if (g.weighted()) check_sums(g);
    if (auto lost = unreachable_node(g)) {
      fail(nodes_line_, std::string(g.directed() ? "graph is not strongly connected"
                                                 : "graph is not connected") +
                            ": node " + std::to_string(*lost) +
                            (g.directed() ? " and node 0 do not reach each other both ways"
                                          : " cannot be reached from node 0"));
    }
    return std::move(*graph_);
  }

 private:
  static bool is_integer(const std::string& s) {
    long v;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
  }

  static std::string join(const std::vector<std::string>& t) {
    std::string s;
    for (const auto& w : t) s += (s.empty() ? "" : " ") + w;
    return s;
  }

  void parse_nodes(const std::vector<std::string>& t, int line) {
    if (graph_) fail(line, "'nodes' given twice (first on line " + std::to_string(nodes_line_) + ")");
    long n = 0;
    if (t.size() != 2 || !is_integer(t[1]) || (n = std::stol(t[1])) < 1 || n > 1000000) {
      fail(line, "expected 'nodes N' with N a whole number from 1 to 1000000");
    }
    nodes_ = static_cast<int>(n);
    nodes_line_ = line;
    graph_.emplace(nodes_, directed_);
    last_line_of_.assign(static_cast<std::size_t>(nodes_), line);
    self_line_of_.assign(static_cast<std::size_t>(nodes_), 0);
  }

  void parse_direction(const std::vector<std::string>& t, int line) {
    if (t.size() != 1) fail(line, "'" + t[0] + "' takes no arguments");
    if (direction_seen_) fail(line, "'directed' or 'undirected' given twice");
    if (graph_ && graph_->edge_count() > 0) fail(line, "'" + t[0] + "' must come before the edges");
    direction_seen_ = true;
    directed_ = t[0] == "directed";
    if (graph_) graph_.emplace(nodes_, directed_);
  }

  void require_header(int line) {
    if (!graph_) fail(line, "'nodes N' must come before the edges");
    if (!direction_seen_) fail(line, "'directed' or 'undirected' must come before the edges");
  }

  int node(const std::string& s, int line) const {
    if (!is_integer(s)) fail(line, "'" + s + "' is not a node number");
    const long v = std::stol(s);
    if (v < 0 || v >= nodes_) {
      fail(line, "unknown node " + s + " (nodes are 0.." + std::to_string(nodes_ - 1) + ")");
    }
    return static_cast<int>(v);
  }

  double weight(const std::string& s, int line) const {
    double v = 0.0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
      fail(line, "weight '" + s + "' is not a number");
    }
    if (v < 0) fail(line, "negative weight " + s + "; mixing weights are between 0 and 1");
    if (v > 1) fail(line, "weight " + s + " is above 1; mixing weights are between 0 and 1");
    return v;
  }

  void parse_self(const std::vector<std::string>& t, int line) {
    require_header(line);
    if (t.size() != 3) fail(line, "expected 'self NODE WEIGHT'");
    const int i = node(t[1], line);
    const double w = weight(t[2], line);
    if (self_line_of_[i] > 0) {
      fail(line, "self weight of node " + t[1] + " given twice (first on line " +
                     std::to_string(self_line_of_[i]) + ")");
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
      fail(line, "self loop " + t[0] + " " + t[1] + "; write 'self " + t[0] +
                     " WEIGHT' for a self weight");
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
        fail(line, "unexpected '" + t[k] + "'; an edge is 'A B [WEIGHT] [class=NAME]'");
      }
    }
    std::pair<int, int> key{a, b};
    if (!directed_ && a > b) key = {b, a};
    auto [it, fresh] = edge_lines_.emplace(key, line);
    if (!fresh) {
      fail(line, "duplicate edge " + t[0] + " " + t[1] + " (first on line " +
                     std::to_string(it->second) + ")");
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
      const std::string whose = g.directed() ? "the weights node " + std::to_string(i) + " sends"
                                             : "the weights of node " + std::to_string(i);
      const std::string rule = g.directed()
                                   ? "each column of a push-sum matrix must sum to 1"
                                   : "each row of the mixing matrix must sum to 1";
      if (!std::isnan(self)) {
        const double sum = off + self;
        if (std::abs(sum - 1.0) > kSumTolerance) {
          std::ostringstream os;
          os.precision(12);
          os << whose << " (self included) sum to " << sum << ", not 1; " << rule
             << " within 1e-9";
          fail(self_line_of_[i], os.str());
        }
      } else if (off > 1.0 + kSumTolerance) {
        std::ostringstream os;
        os.precision(12);
        os << whose << " sum to " << off << ", above 1; " << rule << " within 1e-9";
        fail(last_line_of_[i], os.str());
      }
    }
  }

  std::string path_;
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

Graph parse_topology(std::istream& in, const std::string& path) {
  Parser parser(path);
  int line = 0;
  for (std::string text; std::getline(in, text);) parser.parse_line(text, ++line);
  return parser.finish(line == 0 ? 1 : line);
}

Graph read_topology_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TopologyError(path + ": cannot open the topology file");
  return parse_topology(in, path);
}

}  // namespace murmur::gossip
