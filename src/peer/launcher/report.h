// What murmur-run reports at the end of a job: the result table on stdout
// and the --summary JSON file, both built from the peers' result events.
//
// Pure functions except write_file_atomically; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace murmur::peer::launcher {

// One failure of a rank's process: when, why, and what it said last.
struct PeerFailure {
  double seconds = 0;              // since murmur-run started the job
  std::string reason;              // "exited with status 3", "killed by signal 9 (Killed)"
  std::optional<int> exit_status;  // set when it exited
  std::optional<int> signal;       // set when a signal killed it
  std::string last_stderr;         // its last stderr line; "" when none
};

struct PeerRecord {
  int rank = 0;
  std::string host;
  std::optional<nlohmann::json> result;  // the peer's result event, if it sent one
  bool finished = false;                 // its (last) process exited with status 0
  std::vector<PeerFailure> restarts;     // failures after which the rank was started again
  std::optional<PeerFailure> lost;       // the failure that lost it (--on-failure continue/restart)
};

// The averaged model's accuracy: every peer reports the same value or null;
// the first non-null in rank order, or nullopt.
std::optional<double> average_model_accuracy(const std::vector<PeerRecord>& peers);

// Table (rank, host, test accuracy, MB sent, MB received, wall s; "-" where a
// peer sent no value), then the averaged model's accuracy, the totals and the
// launcher's wall time. MB are 10^6 bytes.
std::string format_result_table(const std::vector<PeerRecord>& peers, double wall_seconds);

// {"average_model_test_accuracy", "peer_test_accuracy" (by rank, null where
// missing), "wall_seconds" (launcher), "bytes_sent", "bytes_received" (sums
// over peers), "peers" (result objects by rank, null where missing),
// "command", "np"}.
nlohmann::json make_summary(const std::vector<PeerRecord>& peers, double wall_seconds,
                            const std::vector<std::string>& command);

// Writes `text` to "<path>.tmp.<pid>" next to `path`, flushes it to disk and
// renames it over `path`, so a reader sees the old file or the whole new
// one. Throws std::runtime_error naming the path and errno text.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace murmur::peer::launcher
