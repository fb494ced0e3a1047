#include "peer/events/peer_events.h"

#include <cmath>
#include <csignal>
#include <limits>
#include <type_traits>

namespace murmur::peer::events {

namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const json& field(const json& event, const char* key) {
  auto it = event.find(key);
  if (it == event.end()) throw EventError(std::string("missing key '") + key + "'");
  return *it;
}

template <typename Int>
Int integer(const json& event, const char* key) {
  const json& v = field(event, key);
  if (!v.is_number_integer()) throw EventError(std::string("key '") + key + "' is not an integer");
  if (std::is_unsigned_v<Int> && !v.is_number_unsigned() && v.get<std::int64_t>() < 0) {
    throw EventError(std::string("key '") + key + "' is negative");
  }
  return v.get<Int>();
}

// A number, or NaN for null or an absent optional key.
double number(const json& event, const char* key, bool required) {
  auto it = event.find(key);
  if (it == event.end()) {
    if (required) throw EventError(std::string("missing key '") + key + "'");
    return kNaN;
  }
  if (it->is_null()) return kNaN;
  if (!it->is_number()) throw EventError(std::string("key '") + key + "' is not a number");
  return it->get<double>();
}

// NaN travels as null (JSON has no NaN).
json number_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::vector<int> ranks(const json& event, const char* key) {
  const json& v = field(event, key);
  if (!v.is_array()) throw EventError(std::string("key '") + key + "' is not an array");
  if (v.size() > kMaxViewRanks) throw EventError(std::string("key '") + key + "' lists too many ranks");
  std::vector<int> out;
  out.reserve(v.size());
  for (const auto& r : v) {
    if (!r.is_number_integer() || r.get<std::int64_t>() < 0 || r.get<std::int64_t>() > (1 << 30)) {
      throw EventError(std::string("key '") + key + "' holds something that is not a rank");
    }
    out.push_back(r.get<int>());
  }
  return out;
}

}  // namespace

std::string format_event(const json& event) {
  if (!event.is_object() || !event.contains("event") || !event["event"].is_string()) {
    throw std::invalid_argument("format_event: expected an object with a string \"event\" key, got " +
                                event.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  // Compact dump: one line whatever the strings hold (newlines are escaped).
  return std::string(kEventPrefix) + event.dump(-1, ' ', false, json::error_handler_t::replace);
}

void emit_event(const json& event, std::FILE* out) {
  auto line = format_event(event);
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

json to_json(const ProgressEvent& p) {
  return json{{"event", "progress"},
              {"rank", p.rank},
              {"epoch", p.epoch},
              {"epochs", p.epochs},
              {"step", p.step},
              {"steps", p.steps},
              {"loss", number_or_null(p.loss)},
              {"accuracy", number_or_null(p.accuracy)},
              {"bytes_sent", p.bytes_sent}};
}

json to_json(const ResultEvent& r) {
  return json{{"event", "result"},
              {"rank", r.rank},
              {"test_accuracy", number_or_null(r.test_accuracy)},
              {"average_model_test_accuracy", number_or_null(r.average_model_test_accuracy)},
              {"bytes_sent", r.bytes_sent},
              {"bytes_received", r.bytes_received},
              {"wall_seconds", number_or_null(r.wall_seconds)}};
}

json to_json(const ViewEvent& v) {
  return json{{"event", "view"},
              {"rank", v.rank},
              {"generation", v.generation},
              {"members", v.members},
              {"lost", v.lost},
              {"joined", v.joined},
              {"spectral_gap", number_or_null(v.spectral_gap)}};
}

bool is_event_line(std::string_view line) { return line.starts_with(kEventPrefix); }

json parse_event(std::string_view line) {
  if (!is_event_line(line)) throw EventError("not an event line (no '@murmur ' prefix)");
  json event = json::parse(line.substr(kEventPrefix.size()), nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded()) throw EventError("not valid JSON after '@murmur '");
  if (!event.is_object()) throw EventError("the JSON after '@murmur ' is not an object");
  if (!event.contains("event") || !event["event"].is_string()) throw EventError("no string \"event\" key");
  return event;
}

ProgressEvent progress_from_json(const json& event) {
  ProgressEvent p;
  p.rank = integer<int>(event, "rank");
  p.epoch = integer<int>(event, "epoch");
  p.epochs = integer<int>(event, "epochs");
  p.step = integer<std::int64_t>(event, "step");
  p.steps = integer<std::int64_t>(event, "steps");
  p.loss = number(event, "loss", true);
  p.accuracy = number(event, "accuracy", true);
  p.bytes_sent = integer<std::uint64_t>(event, "bytes_sent");
  return p;
}

ResultEvent result_from_json(const json& event) {
  ResultEvent r;
  r.rank = integer<int>(event, "rank");
  r.test_accuracy = number(event, "test_accuracy", false);
  r.average_model_test_accuracy = number(event, "average_model_test_accuracy", false);
  r.bytes_sent = event.contains("bytes_sent") ? integer<std::uint64_t>(event, "bytes_sent") : 0;
  r.bytes_received = event.contains("bytes_received") ? integer<std::uint64_t>(event, "bytes_received") : 0;
  r.wall_seconds = number(event, "wall_seconds", false);
  return r;
}

ViewEvent view_from_json(const json& event) {
  ViewEvent v;
  v.rank = integer<int>(event, "rank");
  v.generation = integer<std::uint64_t>(event, "generation");
  v.members = integer<int>(event, "members");
  if (v.members < 0) throw EventError("key 'members' is negative");
  v.lost = ranks(event, "lost");
  v.joined = ranks(event, "joined");
  v.spectral_gap = number(event, "spectral_gap", false);
  return v;
}

void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

}  // namespace murmur::peer::events
