#include "gossip/topology/report.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gossip/topology/spectral.h"

namespace murmur::gossip {

namespace {
std::string num(double v, int digits = 6) { return fmt::format("{:.{}g}", v, digits); }

// The weight node `from` gives to node `to`'s copy (W(to, from)).
double sent(const TopologyReport& r, int from, int to) { return r.weights(to, from); }

// A DOT quoted ID: '"' and '\\' escaped; a line break would end the ID, so
// control characters become spaces. (JSON goes through nlohmann::json.)
std::string dot_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + "\"";
}
}  // namespace

TopologyReport analyse(const Topology& topology, std::uint64_t round) {
  TopologyReport r;
  r.name = topology.name();
  r.time_varying = topology.time_varying();
  r.period = topology.period();
  r.round = round;
  r.graph = topology.at_round(round);
  r.scheme = default_scheme(r.graph);
  r.weights = mixing_matrix(r.graph, r.scheme);
  r.degree = degrees(r.graph);
  r.diameter = diameter(r.graph);
  r.lambda2 = second_eigenvalue_modulus(r.weights);
  r.spectral_gap = 1.0 - r.lambda2;
  if (r.time_varying) {
    Matrix product = r.weights;
    const std::uint64_t rounds = std::min<std::uint64_t>(r.period, 64);
    for (std::uint64_t k = 1; k < rounds; ++k) {
      const Graph g = topology.at_round(round + k);
      product = multiply(mixing_matrix(g, default_scheme(g)), product);
    }
    r.period_spectral_gap = spectral_gap(product);
  }
  return r;
}

void print_text(std::ostream& out, const TopologyReport& r) {
  const Graph& g = r.graph;
  out << "topology: " << r.name << ", " << g.size() << " nodes, " << (g.directed() ? "directed" : "undirected") << ", "
      << g.edge_count() << " edges";
  if (r.time_varying) {
    out << ", time-varying (round " << r.round << ", period " << r.period << ")";
  } else {
    out << ", static";
  }
  out << "\nweights: " << to_string(r.scheme) << "\n";
  for (int i = 0; i < g.size(); ++i) {
    out << "node " << i << ": self " << num(r.weights(i, i)) << (g.directed() ? "; sends" : ";");
    bool first = true;
    for (const Link& l : g.out(i)) {
      out << (first ? " " : ", ") << l.peer << " " << num(sent(r, i, l.peer));
      if (!l.label.empty()) out << " (" << l.label << ")";
      first = false;
    }
    out << "\n";
  }
  if (g.directed()) {
    out << "out-degree: min " << r.degree.min_out << ", max " << r.degree.max_out << "\n";
    out << "in-degree: min " << r.degree.min_in << ", max " << r.degree.max_in << "\n";
  } else {
    out << "degree: min " << r.degree.min_out << ", max " << r.degree.max_out << "\n";
  }
  out << "diameter: "
      << (r.diameter ? fmt::format("{}", *r.diameter)
                     : std::string(g.directed() ? "infinite (not strongly connected)" : "infinite (not connected)"))
      << "\n";
  out << "spectral gap: " << num(r.spectral_gap, 12) << " (|lambda_2| = " << num(r.lambda2, 12) << ")\n";
  if (r.period_spectral_gap) {
    out << "spectral gap over one period: " << num(*r.period_spectral_gap, 12) << "\n";
  }
}

void print_json(std::ostream& out, const TopologyReport& r) {
  // ordered_json keeps the keys in the order written here; numbers are
  // printed so that they read back as the same doubles.
  using Json = nlohmann::ordered_json;
  const Graph& g = r.graph;
  Json neighbours = Json::array();
  for (int i = 0; i < g.size(); ++i) {
    Json links = Json::array();
    for (const Link& l : g.out(i)) {
      Json link = {{"peer", l.peer}, {"weight", sent(r, i, l.peer)}};
      if (!l.label.empty()) link["class"] = l.label;
      links.push_back(std::move(link));
    }
    neighbours.push_back({{"node", i}, {"self", r.weights(i, i)}, {"out", std::move(links)}});
  }
  Json report = {{"name", r.name},
                 {"nodes", g.size()},
                 {"directed", g.directed()},
                 {"time_varying", r.time_varying},
                 {"round", r.round},
                 {"period", r.period},
                 {"edges", g.edge_count()},
                 {"weights", to_string(r.scheme)},
                 {"neighbours", std::move(neighbours)},
                 {"degree",
                  {{"min_out", r.degree.min_out},
                   {"max_out", r.degree.max_out},
                   {"min_in", r.degree.min_in},
                   {"max_in", r.degree.max_in}}},
                 {"diameter", r.diameter ? Json(*r.diameter) : Json(nullptr)},
                 {"lambda2", r.lambda2},
                 {"spectral_gap", r.spectral_gap}};
  if (r.period_spectral_gap) report["period_spectral_gap"] = *r.period_spectral_gap;
  // Invalid UTF-8 in a name (a file name is bytes) is replaced, not thrown.
  out << report.dump(1, ' ', false, Json::error_handler_t::replace) << "\n";
}

void print_dot(std::ostream& out, const TopologyReport& r) {
  const Graph& g = r.graph;
  const char* arrow = g.directed() ? " -> " : " -- ";
  out << (g.directed() ? "digraph" : "graph") << " " << dot_string(r.name) << " {\n";
  out << "  // " << to_string(r.scheme) << " weights; spectral gap " << num(r.spectral_gap, 12) << "\n";
  for (int i = 0; i < g.size(); ++i) {
    out << "  " << i << " [label=\"" << i << "\\nself " << num(r.weights(i, i), 4) << "\"];\n";
  }
  for (int i = 0; i < g.size(); ++i) {
    for (const Link& l : g.out(i)) {
      if (!g.directed() && l.peer < i) continue;
      out << "  " << i << arrow << l.peer << " [label=\"" << num(sent(r, i, l.peer), 4);
      if (!l.label.empty())
        out << " " << l.label << "\", class=" << dot_string(l.label);
      else
        out << "\"";
      out << "];\n";
    }
  }
  out << "}\n";
}

}  // namespace murmur::gossip
