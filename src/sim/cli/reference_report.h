// The calibration's evidence: every ResNet-50 reference cell, measured
// against predicted, with the relative error and a summary line (max and
// median |error|, cells within 15%). Text or Markdown. Thread-safe.
#pragma once

#include <ostream>
#include <vector>

#include "sim/cost/calibration.h"

namespace murmur::sim::cli {

void write_reference_comparison(std::ostream& out, const std::vector<cost::CellComparison>& cells, bool markdown);

}  // namespace murmur::sim::cli
