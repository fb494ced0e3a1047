#include "peer/model/lr_schedule.h"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/text.h"

namespace murmur::peer::model {
namespace {

constexpr const char* kAccepted = "accepted: cosine, none, step:S1,S2,...@FACTOR (e.g. step:3000,6000@0.1)";

struct StepDecay {
  std::vector<long> milestones;
  double factor = 1;
};

[[noreturn]] void bad_decay(const std::string& decay, const std::string& why) {
  throw std::invalid_argument("learning-rate decay '" + decay + "': " + why + "; " + kAccepted);
}

StepDecay parse_step(const std::string& decay) {
  const std::string body = decay.substr(5);  // after "step:"
  const std::size_t at = body.find('@');
  if (at == std::string::npos) bad_decay(decay, "no '@FACTOR'");
  StepDecay d;
  if (!parse_number(body.substr(at + 1), d.factor) || !(d.factor > 0))
    bad_decay(decay, "factor '" + body.substr(at + 1) + "' is not a positive number");
  const std::string list = body.substr(0, at);
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = list.find(',', pos);
    const std::string token = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    long m = 0;
    if (!parse_number(token, m) || m < 0) bad_decay(decay, "milestone '" + token + "' is not a step number");
    if (!d.milestones.empty() && m <= d.milestones.back()) bad_decay(decay, "milestones must increase");
    d.milestones.push_back(m);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return d;
}

// The numbers; the decay string is checked where it is parsed.
void validate_values(const LrScheduleSpec& s) {
  if (!(s.base > 0) || !std::isfinite(s.base))
    throw std::invalid_argument("learning rate " + std::to_string(s.base) + " must be a positive number");
  if (s.warmup_steps < 0)
    throw std::invalid_argument("warm-up steps " + std::to_string(s.warmup_steps) + " must not be negative");
  if (s.total_steps < 1)
    throw std::invalid_argument("total steps " + std::to_string(s.total_steps) + " must be at least 1");
}

// The decay's shape: cosine, none, or the parsed step decay. Parsed on every
// call of learning_rate_at: well under a microsecond once per training step,
// and the spec stays a plain value with no cache to keep in sync.
enum class Kind { kCosine, kNone, kStep };

Kind decay_kind(const std::string& decay, StepDecay* step) {
  if (decay == "cosine") return Kind::kCosine;
  if (decay == "none") return Kind::kNone;
  if (decay.compare(0, 5, "step:") != 0) bad_decay(decay, "unknown decay");
  *step = parse_step(decay);
  return Kind::kStep;
}

}  // namespace

LrScheduleSpec parse_lr_schedule(double base, long warmup_steps, long total_steps, const std::string& decay) {
  LrScheduleSpec s{base, warmup_steps, total_steps, decay};
  validate_values(s);
  StepDecay unused;
  decay_kind(s.decay, &unused);
  return s;
}

double learning_rate_at(const LrScheduleSpec& s, long step) {
  validate_values(s);
  StepDecay d;
  const Kind kind = decay_kind(s.decay, &d);
  if (step < s.warmup_steps) {
    const double t = double(step < 0 ? 0 : step) / double(s.warmup_steps);
    return s.base * (0.1 + 0.9 * t);
  }
  switch (kind) {
    case Kind::kNone:
      return s.base;
    case Kind::kCosine: {
      const long span = s.total_steps - s.warmup_steps;
      if (span <= 0) return 0.0;
      double t = double(step - s.warmup_steps) / double(span);
      t = t < 0 ? 0 : (t > 1 ? 1 : t);
      return s.base * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
    }
    case Kind::kStep:
      break;
  }
  double lr = s.base;
  for (long m : d.milestones)
    if (step >= m) lr *= d.factor;
  return lr;
}

}  // namespace murmur::peer::model
