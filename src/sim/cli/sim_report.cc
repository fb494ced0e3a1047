#include "sim/cli/sim_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace murmur::sim::cli {
namespace {

struct Column {
  const char* header;
  std::string (*cell)(const SimRow&);
};

std::string ms(double s) { return fmt::format("{:.2f}", s * 1e3); }

const std::vector<Column>& columns() {
  static const std::vector<Column> c = {
      {"model", [](const SimRow& r) { return r.model; }},
      {"network", [](const SimRow& r) { return r.network; }},
      {"method", [](const SimRow& r) { return r.method; }},
      {"gpus", [](const SimRow& r) { return std::to_string(r.gpus); }},
      {"samples_per_s", [](const SimRow& r) { return fmt::format("{:.1f}", r.samples_per_s); }},
      {"speedup", [](const SimRow& r) { return fmt::format("{:.2f}", r.speedup); }},
      {"iteration_ms", [](const SimRow& r) { return ms(r.iteration_s); }},
      {"compute_ms", [](const SimRow& r) { return ms(r.compute_s); }},
      {"comm_ms", [](const SimRow& r) { return ms(r.comm_s); }},
      {"overlap_ms", [](const SimRow& r) { return ms(r.overlap_s); }},
      {"exposed_ms", [](const SimRow& r) { return ms(r.exposed_s); }},
      {"link_MB", [](const SimRow& r) { return fmt::format("{:.1f}", r.link_bytes / 1e6); }},
      {"configuration", [](const SimRow& r) { return r.configuration; }},
  };
  return c;
}

// CSV quoting for the one free-text column.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

void write_paper_csv(std::ostream& out, const std::vector<SimRow>& rows) {
  out << "model,network,method,gpus,samples_per_s\n";
  for (const SimRow& r : rows)
    out << r.model << ',' << r.network << ',' << r.method << ',' << r.gpus << ','
        << fmt::format("{:.1f}", r.samples_per_s) << '\n';
}

void write_csv(std::ostream& out, const std::vector<SimRow>& rows) {
  const auto& cols = columns();
  for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i].header;
  out << '\n';
  for (const SimRow& r : rows) {
    for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << csv_field(cols[i].cell(r));
    out << '\n';
  }
}

void write_markdown(std::ostream& out, const std::vector<SimRow>& rows) {
  const auto& cols = columns();
  out << '|';
  for (const Column& c : cols) out << ' ' << c.header << " |";
  out << "\n|";
  for (std::size_t i = 0; i < cols.size(); ++i) out << (i < 3 || i + 1 == cols.size() ? "---|" : "---:|");
  out << '\n';
  for (const SimRow& r : rows) {
    out << '|';
    for (const Column& c : cols) out << ' ' << c.cell(r) << " |";
    out << '\n';
  }
}

void write_text(std::ostream& out, const std::vector<SimRow>& rows) {
  const auto& cols = columns();
  std::vector<std::size_t> width(cols.size());
  for (std::size_t i = 0; i < cols.size(); ++i) {
    width[i] = std::string(cols[i].header).size();
    for (const SimRow& r : rows) width[i] = std::max(width[i], cols[i].cell(r).size());
  }
  auto line = [&](auto cell_of) {
    std::string s;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const std::string cell = cell_of(i);
      const std::string pad(width[i] - cell.size(), ' ');
      s += (i ? "  " : "") + (i < 3 || i + 1 == cols.size() ? cell + pad : pad + cell);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << '\n';
  };
  line([&](std::size_t i) { return std::string(cols[i].header); });
  for (const SimRow& r : rows) line([&](std::size_t i) { return cols[i].cell(r); });
}

}  // namespace murmur::sim::cli
