// The --schedule flag and schedule files: how the scheduler is configured.
//
//   --schedule fixed                              no scheduler: the algorithm's own period and compressor
//   --schedule adaptive                           the scheduler with default knobs
//   --schedule adaptive:min_ratio=0.01,max_period=8
//   --schedule @path/to/file.sched                the scheduler with knobs from a file
//
// A schedule file holds one `key = value` per line; '#' starts a comment
// (anywhere); blank lines are ignored:
//
//   # a slow network: allow heavy compression, but never skip more than 4 steps
//   min_ratio = 0.001
//   max_period = 4
//   consensus_guard = 2
//
// Keys and their ranges: schedule_settings() (docs/scheduler.md has the
// table). Values are numbers; the integer keys take integers only.
// Refused with ScheduleError "path:line: reason": a line without '=', an
// unknown key, a key given twice, an empty, non-numeric, non-finite,
// non-integer (integer keys) or out-of-range value, and pairs that do not fit
// (min_ratio > max_ratio, min_period > max_period, change_run > window,
// suspect_run > change_run; the
// line is the later of the two). A flag that does not parse: ScheduleError
// "schedule 'SPEC': ITEM: reason".
// Blocking: read_schedule_file reads the whole file. Thread-safe (no state).
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <vector>

#include "gossip/schedule/errors.h"
#include "gossip/schedule/link_estimator.h"
#include "gossip/schedule/policy.h"

namespace murmur::gossip::schedule {

enum class ScheduleMode { kFixed, kAdaptive };

struct ScheduleConfig {
  ScheduleMode mode = ScheduleMode::kAdaptive;
  ScheduleBounds bounds;
  LinkEstimatorOptions link;
  std::size_t compute_window = 9;  // ComputeEstimator window
  // Decisions at the start whose consensus signals set no guard reference
  // (ScheduleController): models that start identical drift apart for a
  // while whatever the setting.
  int guard_warmup_rounds = 20;
  // Receivers report each receive's time to its sender (AlgorithmOptions::
  // receipts), so that a late receiver is not taken for a slow link
  // (LinkEstimator::observe_with_receipt). Every rank must agree.
  bool receipts = true;
  std::string source = "adaptive";  // the flag or "@path" it came from, for the record
};

// One knob, as listed by `--schedule help`-style output and docs/scheduler.md.
struct ScheduleSetting {
  std::string name;
  std::string type;           // "real" or "integer"
  std::string default_value;  // as text
  std::string range;          // e.g. "(0, 1]"
  std::string help;
};
const std::vector<ScheduleSetting>& schedule_settings();

// `path` names the source in error messages.
ScheduleConfig parse_schedule(std::istream& in, const std::string& path);
// Throws ScheduleError "path: cannot open ..." when the file cannot be read.
ScheduleConfig read_schedule_file(const std::string& path);
// "fixed" | "adaptive" | "adaptive:key=value,..." | "@path".
ScheduleConfig parse_schedule_flag(const std::string& spec);

}  // namespace murmur::gossip::schedule
