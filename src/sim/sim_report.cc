#include "sim/sim_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace murmur::sim {
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

// Titles and method names may come from users' files.
std::string xml_escape(const std::string& s) {
  std::string e;
  for (char ch : s) {
    switch (ch) {
      case '<': e += "&lt;"; break;
      case '>': e += "&gt;"; break;
      case '&': e += "&amp;"; break;
      case '"': e += "&quot;"; break;
      default: e += ch;
    }
  }
  return e;
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

void write_speedup_svg(std::ostream& out, const std::vector<SimRow>& rows, const std::string& title) {
  std::map<std::string, std::vector<std::pair<int, double>>> lines;  // by method
  int max_gpus = 1;
  double max_speedup = 1;
  for (const SimRow& r : rows) {
    lines[r.method].emplace_back(r.gpus, r.speedup);
    max_gpus = std::max(max_gpus, r.gpus);
    max_speedup = std::max(max_speedup, r.speedup);
  }
  max_speedup = std::max(max_speedup, static_cast<double>(max_gpus));
  const double w = 720, h = 440, left = 60, right = 220, top = 40, bottom = 50;
  const double plot_w = w - left - right, plot_h = h - top - bottom;
  // GPU counts on a log2 axis, as they double.
  const double x_max = std::log2(static_cast<double>(max_gpus));
  auto x = [&](double gpus) { return left + (x_max > 0 ? std::log2(gpus) / x_max : 0.0) * plot_w; };
  auto y = [&](double s) { return top + plot_h - s / max_speedup * plot_h; };
  static const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};
  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)",
                     w, h)
      << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << fmt::format("<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n", left, xml_escape(title));
  // Axes, ticks and the linear-scaling reference.
  out << fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", left, top + plot_h,
                     left + plot_w)
      << fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left, top, top + plot_h);
  for (int g = 1; g <= max_gpus; g *= 2)
    out << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(g), top + plot_h + 16, g);
  for (int i = 0; i <= 4; ++i) {
    const double s = max_speedup * i / 4;
    out << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.0f}</text>\n", left - 6, y(s) + 4, s);
  }
  out << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">GPUs</text>\n", left + plot_w / 2, h - 12)
      << fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">speedup over one GPU</text>\n",
                     top + plot_h / 2, top + plot_h / 2)
      << fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#bbbbbb\" stroke-dasharray=\"4 4\"/>\n", x(1),
                     y(1), x(max_gpus), y(max_gpus));
  std::size_t colour = 0;
  for (auto& [method, points] : lines) {
    std::sort(points.begin(), points.end());
    const char* c = kColours[colour++ % std::size(kColours)];
    std::string path;
    for (const auto& [g, s] : points) path += fmt::format("{}{:.1f},{:.1f} ", path.empty() ? "M" : "L", x(g), y(s));
    out << fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, c);
    for (const auto& [g, s] : points)
      out << fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", x(g), y(s), c);
    const double ly = top + 14.0 * static_cast<double>(colour);
    out << fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                       left + plot_w + 16, ly - 4, left + plot_w + 36, ly - 4, c)
        << fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", left + plot_w + 42, ly, xml_escape(method));
  }
  out << "</svg>\n";
}

}  // namespace murmur::sim
