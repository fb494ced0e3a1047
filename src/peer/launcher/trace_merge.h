// murmur-run --trace DIR: the peers' timelines (DIR/rank-N.json, written by
// each peer's trace::Session) merged into one Chrome trace-event file, one
// process row per peer (pid = rank), on one clock.
//
// Clocks. Each file states its origin on the steady clock
// (CLOCK_MONOTONIC) and on the wall clock, taken together, and its host's
// boot id. When every file has the same boot id the peers ran on one
// kernel, whose monotonic clock they all read: aligning on it is exact.
// Otherwise the wall clocks are used, which are only as close as the hosts'
// NTP keeps them (typically well under a millisecond on a LAN, but nothing
// here checks it); the merged file says which alignment it used.
//
// Blocking: reads and writes files. Thread safety: none needed (pure).
#pragma once

#include <string>
#include <vector>

namespace murmur::peer::launcher {

struct TraceMergeResult {
  std::string path;                   // the merged file
  int peers = 0;                      // files merged
  std::string clock;                  // "steady (one host)" or "wall clock (several hosts)"
  std::vector<std::string> problems;  // files skipped, each naming the file and why
};

// Merges every rank-*.json in `dir` into `dir`/trace.json. A file that is
// missing its header or is not JSON is skipped and named in `problems`.
// Throws std::runtime_error naming the path when the result cannot be
// written or no file could be read.
TraceMergeResult merge_traces(const std::string& dir);

}  // namespace murmur::peer::launcher
