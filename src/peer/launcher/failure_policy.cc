#include "peer/launcher/failure_policy.h"

namespace murmur::peer::launcher {

std::string_view on_failure_name(OnFailure policy) {
  switch (policy) {
    case OnFailure::kContinue:
      return "continue";
    case OnFailure::kStop:
      return "stop";
    case OnFailure::kRestart:
      return "restart";
  }
  return "?";
}

std::optional<OnFailure> parse_on_failure(std::string_view word) {
  for (auto p : {OnFailure::kContinue, OnFailure::kStop, OnFailure::kRestart}) {
    if (word == on_failure_name(p)) return p;
  }
  return std::nullopt;
}

int default_min_np(int np) { return (np + 1) / 2; }

FailureAction action_for_failure(const FailurePolicy& policy, int restarts) {
  switch (policy.on_failure) {
    case OnFailure::kStop:
      return FailureAction::kStopJob;
    case OnFailure::kRestart:
      if (restarts < policy.max_restarts) return FailureAction::kRestart;
      return FailureAction::kLose;
    case OnFailure::kContinue:
      break;
  }
  return FailureAction::kLose;
}

bool can_still_succeed(const FailurePolicy& policy, int finished, int running) {
  return finished + running >= policy.min_np;
}

}  // namespace murmur::peer::launcher
