// Machine-readable event lines between a murmur peer and murmur-run.
//
// A peer prints one line "@murmur <json object>" on stdout (or stderr) per
// event; murmur-run reads them from the peer's pipe, does not echo them, and
// builds its progress display, result table and --summary from them.
//
//   {"event":"progress","rank":r,"epoch":e,"epochs":E,"step":s,"steps":S,
//    "loss":x,"accuracy":a,"bytes_sent":b}
//   {"event":"result","rank":r,"test_accuracy":a,
//    "average_model_test_accuracy":a_or_null,"bytes_sent":b,
//    "bytes_received":b,"wall_seconds":t, ...any other keys}
//   {"event":"view","rank":r,"generation":g,"members":n,"lost":[ranks],
//    "joined":[ranks],"spectral_gap":x_or_null}
//
// Epochs and steps count from 1 (step s of S finished); accuracies are
// fractions in [0, 1]; bytes are payload bytes this peer sent or received;
// loss and accuracy may be null (NaN) when there is nothing to report yet.
// Pipes are block-buffered: peers flush after each event (emit_event does).
//
// view: the gossip membership this peer now works with. Every surviving peer
// prints the same generation once the change reaches it; murmur-run shows
// each generation once. `generation` increases by one per change, `members`
// counts the ranks in the new view, `lost` and `joined` are the ranks that
// left and entered it, `spectral_gap` is the new mixing matrix's (null when
// not computed).
//
// murmur::peer_events is its own small target (nlohmann_json and common only)
// so that peers (murmur-peer, test peers) link it without the launcher.
//
// Pure functions except emit_event (writes and flushes a FILE*); all are
// thread-safe on distinct arguments.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace murmur::peer::events {

inline constexpr std::string_view kEventPrefix = "@murmur ";

// A line that starts with the prefix but does not hold a valid event.
class EventError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProgressEvent {
  int rank = 0;
  int epoch = 0;
  int epochs = 0;
  std::int64_t step = 0;
  std::int64_t steps = 0;
  double loss = 0;      // NaN when unknown
  double accuracy = 0;  // NaN when unknown
  std::uint64_t bytes_sent = 0;
};

// The result keys murmur-run reads; the object itself may hold more.
struct ResultEvent {
  int rank = 0;
  double test_accuracy = 0;                // NaN when absent or null
  double average_model_test_accuracy = 0;  // NaN when null
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  double wall_seconds = 0;
};

// A change of the membership view (see the top of this file).
struct ViewEvent {
  int rank = 0;  // the peer that reports it
  std::uint64_t generation = 0;
  int members = 0;
  std::vector<int> lost;
  std::vector<int> joined;
  double spectral_gap = 0;  // NaN when null
};

// "@murmur " followed by the compact JSON of `event`, without a newline.
// Throws std::invalid_argument unless `event` is an object with a string
// "event" key.
std::string format_event(const nlohmann::json& event);
// Writes format_event(event) and '\n' to `out` and flushes it.
void emit_event(const nlohmann::json& event, std::FILE* out = stdout);

nlohmann::json to_json(const ProgressEvent& progress);
// Without extra keys; add them to the returned object before emitting.
nlohmann::json to_json(const ResultEvent& result);
nlohmann::json to_json(const ViewEvent& view);

bool is_event_line(std::string_view line);
// Parses an event line (prefix included). Throws EventError saying what is
// wrong (not JSON, not an object, no "event" key).
nlohmann::json parse_event(std::string_view line);
// Read the typed fields; throw EventError naming the missing or mistyped key.
ProgressEvent progress_from_json(const nlohmann::json& event);
ResultEvent result_from_json(const nlohmann::json& event);
// Also checks that members >= 0 and that lost and joined are arrays of
// ranks (non-negative integers) no longer than kMaxViewRanks.
ViewEvent view_from_json(const nlohmann::json& event);
inline constexpr std::size_t kMaxViewRanks = 1 << 20;

// Ignores SIGPIPE for the whole process. A peer's stdout and stderr are pipes
// to murmur-run; if murmur-run dies (SIGKILL, a lost ssh session), the next
// write would otherwise kill the peer with SIGPIPE although its training, and
// the other peers, could go on. With SIGPIPE ignored such writes fail with
// EPIPE, which stdio and emit_event ignore. Call it first thing in main();
// peers started by murmur-run get SIGPIPE's default action (see
// common/subprocess.h). Not for libraries: the disposition is process-wide.
void ignore_sigpipe();

}  // namespace murmur::peer::events
