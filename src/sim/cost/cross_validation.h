// Cross-validation of the paper methods' cost model inside the ResNet-50
// cells: fit on all cells but one network's (or one method's) and predict
// the held-out ones. Each fit starts from the free constants' priors (the
// bands' geometric middles, free_constants.h), so a constant only the
// held-out cells inform stays at its prior: what the model would say on a
// network or method it never saw. Pure functions; thread-safe; each fold
// costs one fit (about a second per 1,000 evaluations).
#pragma once

#include <string>
#include <vector>

#include "sim/model_profile.h"

namespace murmur::sim::cost {

struct HeldOutFold {
  std::string held_out;             // a network preset or a method's name
  int cells = 0;                    // held-out cells
  double fit_median_abs_error = 0;  // on the cells fitted on
  double fit_max_abs_error = 0;
  double median_abs_error = 0;  // on the held-out cells
  double max_abs_error = 0;
};

// Leave-one-network-out folds, then leave-one-method-out folds.
std::vector<HeldOutFold> cross_validate(const ModelProfile& resnet50, int evaluations_per_fit);

}  // namespace murmur::sim::cost
