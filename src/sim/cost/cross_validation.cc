#include "sim/cost/cross_validation.h"

#include <algorithm>
#include <cmath>

#include "sim/cost/calibration.h"
#include "sim/cost/free_constants.h"
#include "sim/cost/network_preset.h"

namespace murmur::sim::cost {
namespace {

HeldOutFold fold(const ModelProfile& resnet50, const std::string& name, const CellFilter& held_out, int evaluations) {
  std::vector<double> start;
  for (const FreeConstant& c : shipped_free_constants()) start.push_back(prior(c));
  const FitResult fit =
      fit_constants(resnet50, start, evaluations, [&](const ReferenceCell& c) { return !held_out(c); });
  std::vector<double> errors;
  for (const CellComparison& c : compare_with_reference(resnet50, fit.constants))
    if (held_out(c.cell)) errors.push_back(std::abs(c.relative_error));
  std::sort(errors.begin(), errors.end());
  HeldOutFold f;
  f.held_out = name;
  f.cells = static_cast<int>(errors.size());
  f.fit_median_abs_error = fit.median_abs_error;
  f.fit_max_abs_error = fit.max_abs_error;
  // The median of an even count: the mean of the middle two.
  const std::size_t n = errors.size();
  f.median_abs_error = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  f.max_abs_error = errors.back();
  return f;
}

}  // namespace

std::vector<HeldOutFold> cross_validate(const ModelProfile& resnet50, int evaluations_per_fit) {
  std::vector<HeldOutFold> folds;
  for (const NetworkPreset& preset : network_presets()) {
    const std::string network = preset.name;
    folds.push_back(fold(
        resnet50, network, [&](const ReferenceCell& c) { return c.network == network; }, evaluations_per_fit));
  }
  for (PaperMethod method : paper_methods())
    folds.push_back(fold(
        resnet50, paper_method_name(method), [&](const ReferenceCell& c) { return c.method == method; },
        evaluations_per_fit));
  return folds;
}

}  // namespace murmur::sim::cost
