// Calibration of the paper methods' constants on the seed paper's ResNet-50
// measurements (the 84 cells of resnet50_reference() in calibration.cc, setup in docs/seed-paper.md:
// 7 methods x 3 networks x 4, 8, 16, 32 GPUs; the BERT rows are held out).
//
// fit_constants() searches the free constants (free_constants.h; in log
// space, clamped into their bands, Nelder-Mead with restarts) that minimise
// a soft maximum (the L16 norm) of the cells' relative errors; murmur-sim
// ships the result as calibrated_constants()
// (`murmur-sim --calibrate` reprints it). Pure functions; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/cost/paper_methods.h"
#include "sim/model_profile.h"

namespace murmur::sim::cost {

struct ReferenceCell {
  std::string network;  // preset name
  PaperMethod method;
  int gpus = 0;
  double samples_per_s = 0;  // measured mean
};

// The 84 ResNet-50 cells.
const std::vector<ReferenceCell>& resnet50_reference();

struct CellComparison {
  ReferenceCell cell;
  MethodPrediction predicted;
  double relative_error = 0;  // (predicted - measured) / measured
};

// Predicts every reference cell (4 GPUs per node, as in the paper).
std::vector<CellComparison> compare_with_reference(const ModelProfile& resnet50, const PaperConstants& constants);

struct FitResult {
  std::vector<double> values;  // the free constants (free_constants.h), in order
  PaperConstants constants;    // derived from them
  double max_abs_error = 0;    // over the cells fitted on
  double median_abs_error = 0;
  int evaluations = 0;
};

// Which reference cells a fit uses; empty: all 84.
using CellFilter = std::function<bool(const ReferenceCell&)>;

// Fits the free constants from `start`, each inside its band; constants
// none of the used cells depend on keep their start value.
FitResult fit_constants(const ModelProfile& resnet50, const std::vector<double>& start, int max_evaluations,
                        const CellFilter& use = {});

// The fitted values as C++ source, for pasting into shipped_free_constants().
std::string constants_as_source(const std::vector<double>& values);

}  // namespace murmur::sim::cost
