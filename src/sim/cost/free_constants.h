// The paper methods' free constants: each a physical quantity with an
// independent source and a band the fit may not leave (docs/sim.md, "The
// constants"). Everything else the cost models use is derived from them
// and from pinned facts (line rates) by derive_constants(). Pure functions;
// thread-safe.
#pragma once

#include <string>
#include <vector>

#include "sim/cost/paper_methods.h"

namespace murmur::sim::cost {

struct FreeConstant {
  std::string name;
  double value = 0;
  double low = 0;  // the band's ends: the fit clamps into [low, high]
  double high = 0;
  std::string charged_per;  // byte, message, tensor, partition, ...
  std::string source;       // where the band comes from
};

// The shipped values (calibration.cc's fit, within their bands).
std::vector<FreeConstant> shipped_free_constants();

// The cost models' constants from the free ones (in shipped order) and the
// pinned line rates. MURMUR_CHECKs the count.
PaperConstants derive_constants(const std::vector<double>& values);

// The band's geometric middle: the value a constant has before any fit
// (a leave-one-out fit keeps there the ones its cells cannot move).
double prior(const FreeConstant& constant);

}  // namespace murmur::sim::cost
