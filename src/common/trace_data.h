// What a trace Session collected, handed from the recorder (trace.cc) to the
// file writer (trace_file.cc). Internal to murmur::common.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/trace.h"

namespace murmur::trace::detail {

enum class Phase : char { kComplete = 'X', kInstant = 'i', kMessage = 'b' };

struct Event {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  const char* name = "";
  Category category = Category::kStep;
  Phase phase = Phase::kComplete;
  Args args;
};

struct ThreadEvents {
  long tid = 0;  // the OS thread id
  std::string name;
  std::vector<Event> events;  // in the order they were recorded
};

struct TraceData {
  int rank = 0;
  std::string label;
  std::string host;
  std::string boot_id;  // same boot id: the same CLOCK_MONOTONIC
  std::int64_t origin_steady_ns = 0;
  std::int64_t origin_unix_ns = 0;  // the wall clock at origin_steady_ns
  std::uint64_t dropped_events = 0;
  std::vector<ThreadEvents> threads;
};

// Writes `data` as Chrome trace-event JSON (docs/trace.md has the layout).
// Throws std::runtime_error naming `path` when it cannot.
void write_trace_file(const std::string& path, const TraceData& data);

}  // namespace murmur::trace::detail
