#include "gossip/schedule/ratio_ladder.h"

#include "common/check.h"

namespace murmur::gossip::schedule {

std::vector<double> ratio_ladder(double min_ratio, double max_ratio) {
  MURMUR_CHECK_GT(min_ratio, 0.0);
  MURMUR_CHECK_LE(min_ratio, max_ratio);
  MURMUR_CHECK_LE(max_ratio, 1.0);
  std::vector<double> ladder;
  // A rung within 1e-9 of min_ratio is min_ratio itself (no near-duplicate).
  for (double r = max_ratio; r > min_ratio * (1 + 1e-9); r /= 2) ladder.push_back(r);
  ladder.push_back(min_ratio);
  return ladder;
}

std::size_t rung_at_or_below(const std::vector<double>& ladder, double ratio) {
  MURMUR_CHECK(!ladder.empty());
  for (std::size_t k = 0; k < ladder.size(); ++k)
    if (ladder[k] <= ratio * (1 + 1e-9)) return k;
  return ladder.size() - 1;
}

}  // namespace murmur::gossip::schedule
