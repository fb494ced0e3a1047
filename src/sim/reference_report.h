// The calibration's evidence: every ResNet-50 reference cell, measured
// against predicted, with the relative error and a summary line (max and
// median |error|, cells within 15%). Text or Markdown. Thread-safe.
#pragma once

#include <ostream>
#include <vector>

#include "sim/calibration.h"

namespace murmur::sim {

void write_reference_comparison(std::ostream& out, const std::vector<CellComparison>& cells, bool markdown);

}  // namespace murmur::sim
