// What murmur-run does when a peer fails (exits non-zero, is killed by a
// signal): the --on-failure, --min-np and --max-restarts flags as one value,
// and the decisions the job loop takes from it. docs/launcher.md has the
// rules in prose.
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace murmur::peer::launcher {

enum class OnFailure {
  kContinue,  // record the peer as lost; the others go on
  kStop,      // stop every peer and fail (murmur-run's behaviour before issue 18)
  kRestart,   // start the rank again, up to max_restarts times, then as kContinue
};

// "continue", "stop", "restart".
std::string_view on_failure_name(OnFailure policy);
// The inverse; nullopt for any other word.
std::optional<OnFailure> parse_on_failure(std::string_view word);

struct FailurePolicy {
  OnFailure on_failure = OnFailure::kContinue;
  int min_np = 1;        // K: peers that must finish with status 0
  int max_restarts = 0;  // per rank, kRestart only
};

// --min-np's default: ceil(np / 2).
int default_min_np(int np);

enum class FailureAction { kRestart, kLose, kStopJob };
// What to do with a peer that failed after `restarts` restarts of its rank.
FailureAction action_for_failure(const FailurePolicy& policy, int restarts);

// Whether the job can still end with min_np peers finished: those that have
// (status 0) plus those still running.
bool can_still_succeed(const FailurePolicy& policy, int finished, int running);

}  // namespace murmur::peer::launcher
