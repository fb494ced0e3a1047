// The compression ratios the scheduler may pick: powers of two below
// max_ratio, down to min_ratio (which is always the last rung). Snapping to
// a ladder keeps the choices of different peers comparable (and their
// compressor specs few), and gives hysteresis a natural step: one rung = 2x.
//
//   ratio_ladder(0.001, 1) == {1, 0.5, 0.25, ..., 0.001953125, 0.001}
#pragma once

#include <cstddef>
#include <vector>

namespace murmur::gossip::schedule {

// Descending, index 0 = max_ratio. MURMUR_CHECKs 0 < min_ratio <= max_ratio <= 1.
std::vector<double> ratio_ladder(double min_ratio, double max_ratio);

// Index of the largest rung <= ratio (the last rung when ratio is below all).
std::size_t rung_at_or_below(const std::vector<double>& ladder, double ratio);

}  // namespace murmur::gossip::schedule
