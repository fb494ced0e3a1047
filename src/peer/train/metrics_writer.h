// MetricsWriter: one peer's metrics as JSON lines (one object per line,
// flushed as written, so that a crash loses at most the line in progress and
// `tail -f` shows the run as it goes). Keys: docs/training.md.
//
// Blocking: file writes. Thread safety: none (the trainer's thread).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace murmur::peer::train {

class MetricsWriter {
 public:
  // Empty path: a writer that drops everything. Otherwise creates or
  // truncates the file (and its directory); std::runtime_error naming the
  // path when it cannot.
  explicit MetricsWriter(const std::string& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  void write(const nlohmann::json& record);
  bool enabled() const { return file_ != nullptr; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Replaces every "{rank}" in `pattern` by `rank`: one file per peer from
// one flag ("metrics/rank-{rank}.jsonl").
std::string expand_rank(std::string pattern, int rank);

}  // namespace murmur::peer::train
