#include "sim/cli/reference_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace murmur::sim::cli {

void write_reference_comparison(std::ostream& out, const std::vector<cost::CellComparison>& cells, bool markdown) {
  const char* row = markdown ? "| {} | {} | {} | {:.1f} | {:.1f} | {:+.1f}% |\n"
                             : "{:<14} {:<18} {:>4} {:>9.1f} {:>9.1f} {:>+7.1f}%\n";
  if (markdown)
    out << "| network | method | GPUs | measured | predicted | error |\n|---|---|---:|---:|---:|---:|\n";
  else
    out << fmt::format("{:<14} {:<18} {:>4} {:>9} {:>9} {:>8}\n", "network", "method", "gpus", "measured", "predicted",
                       "error");
  std::vector<double> errors;
  int within = 0;
  for (const cost::CellComparison& c : cells) {
    out << fmt::format(fmt::runtime(row), c.cell.network, paper_method_name(c.cell.method), c.cell.gpus,
                       c.cell.samples_per_s, c.predicted.samples_per_s, c.relative_error * 100);
    errors.push_back(std::abs(c.relative_error));
    if (std::abs(c.relative_error) <= 0.15) ++within;
  }
  if (errors.empty()) return;
  std::sort(errors.begin(), errors.end());
  out << fmt::format("{}{} of {} cells within 15%; max |error| {:.1f}%, median {:.1f}%\n", markdown ? "\n" : "", within,
                     cells.size(), errors.back() * 100, errors[errors.size() / 2] * 100);
}

}  // namespace murmur::sim::cli
