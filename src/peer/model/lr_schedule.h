// Learning-rate schedules: linear warm-up from base/10 to base over
// warmup_steps, then a decay.
//
// decay:
//   "cosine"                 base * (1 + cos(pi * t)) / 2, t = (step - warmup)
//                            / (total_steps - warmup), clamped to [0, 1]
//                            (so 0 from total_steps on)
//   "none"                   base
//   "step:S1,S2,...@F"       base * F^(number of milestones Si <= step);
//                            milestones are absolute step numbers, increasing
//                            (e.g. "step:3000,6000@0.1")
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace murmur::peer::model {

struct LrScheduleSpec {
  double base = 0.1;
  long warmup_steps = 0;
  long total_steps = 1;
  std::string decay = "cosine";
};

// Checks the values and the decay string; std::invalid_argument naming the
// bad value (and the accepted forms for a bad decay).
LrScheduleSpec parse_lr_schedule(double base, long warmup_steps, long total_steps, const std::string& decay);

// The rate for a step (0-based). A spec that parse_lr_schedule would refuse
// throws std::invalid_argument.
double learning_rate_at(const LrScheduleSpec& spec, long step);

}  // namespace murmur::peer::model
