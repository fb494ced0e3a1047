#include "gossip/schedule/schedule_file.h"

#include <cmath>
#include <functional>
#include <map>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/line_reader.h"

namespace murmur::gossip::schedule {

namespace {

// Every knob, declared once: the file, the flag and schedule_settings() read
// this table.
struct Knob {
  const char* name;
  bool integer;
  const char* range;
  bool (*in_range)(double);
  const char* help;
  double (*get)(const ScheduleConfig&);
  void (*set)(ScheduleConfig&, double);
};

constexpr bool in_ratio(double v) { return v > 0 && v <= 1; }

// clang-format off
const Knob kKnobs[] = {
  {"min_ratio", false, "(0, 1]", in_ratio,
   "most aggressive compression: the smallest fraction of values a message may keep "
   "(choco: keep it >= gamma / 2 on long runs, docs/scheduler.md)",
   [](const ScheduleConfig& c) { return c.bounds.min_ratio; },
   [](ScheduleConfig& c, double v) { c.bounds.min_ratio = v; }},
  {"max_ratio", false, "(0, 1]", in_ratio,
   "least aggressive compression (1: uncompressed); also the ratio before any measurement",
   [](const ScheduleConfig& c) { return c.bounds.max_ratio; },
   [](ScheduleConfig& c, double v) { c.bounds.max_ratio = v; }},
  {"min_period", true, "[1, 1024]", [](double v) { return v >= 1 && v <= 1024; },
   "smallest gossip period H (communicate every H-th step)",
   [](const ScheduleConfig& c) { return double(c.bounds.min_period); },
   [](ScheduleConfig& c, double v) { c.bounds.min_period = int(v); }},
  {"max_period", true, "[1, 1024]", [](double v) { return v >= 1 && v <= 1024; },
   "largest gossip period H",
   [](const ScheduleConfig& c) { return double(c.bounds.max_period); },
   [](ScheduleConfig& c, double v) { c.bounds.max_period = int(v); }},
  {"consensus_guard", false, "0 (off) or [1, 1e6]", [](double v) { return v == 0 || (v >= 1 && v <= 1e6); },
   "step back when consensus distance > this x its reference",
   [](const ScheduleConfig& c) { return c.bounds.consensus_guard; },
   [](ScheduleConfig& c, double v) { c.bounds.consensus_guard = v; }},
  {"budget_fraction", false, "(0, 1]", in_ratio,
   "share of the overlapped computation that a round's communication may take",
   [](const ScheduleConfig& c) { return c.bounds.budget_fraction; },
   [](ScheduleConfig& c, double v) { c.bounds.budget_fraction = v; }},
  {"hysteresis", false, "[0, 0.9]", [](double v) { return v >= 0 && v <= 0.9; },
   "relative band around the budget inside which a choice is kept",
   [](const ScheduleConfig& c) { return c.bounds.hysteresis; },
   [](ScheduleConfig& c, double v) { c.bounds.hysteresis = v; }},
  {"guard_cooldown_rounds", true, "[1, 1000000]", [](double v) { return v >= 1 && v <= 1e6; },
   "rounds between two step backs of the guard",
   [](const ScheduleConfig& c) { return double(c.bounds.guard_cooldown_rounds); },
   [](ScheduleConfig& c, double v) { c.bounds.guard_cooldown_rounds = int(v); }},
  {"guard_release_rounds", true, "[1, 1000000]", [](double v) { return v >= 1 && v <= 1e6; },
   "calm rounds in a row before the guard undoes one step back",
   [](const ScheduleConfig& c) { return double(c.bounds.guard_release_rounds); },
   [](ScheduleConfig& c, double v) { c.bounds.guard_release_rounds = int(v); }},
  {"guard_warmup_rounds", true, "[0, 1000000]", [](double v) { return v >= 0 && v <= 1e6; },
   "rounds at the start whose consensus signals set no guard reference (models starting identical drift apart)",
   [](const ScheduleConfig& c) { return double(c.guard_warmup_rounds); },
   [](ScheduleConfig& c, double v) { c.guard_warmup_rounds = int(v); }},
  {"explore_rounds", true, "[0, 1000000]", [](double v) { return v >= 0 && v <= 1e6; },
   "rounds a ratio is held on a link measured at one message size before one round tries twice the bytes (0: never)",
   [](const ScheduleConfig& c) { return double(c.bounds.explore_rounds); },
   [](ScheduleConfig& c, double v) { c.bounds.explore_rounds = int(v); }},
  {"probe_interval_s", false, "(0, 3600]", [](double v) { return v > 0 && v <= 3600; },
   "an idle link is probed after this many seconds without a transfer",
   [](const ScheduleConfig& c) { return c.link.probe_interval_s; },
   [](ScheduleConfig& c, double v) { c.link.probe_interval_s = v; }},
  {"window", true, "[2, 1024]", [](double v) { return v >= 2 && v <= 1024; },
   "transfers per link in the latency/bandwidth fit",
   [](const ScheduleConfig& c) { return double(c.link.window); },
   [](ScheduleConfig& c, double v) { c.link.window = std::size_t(v); }},
  {"change_factor", false, "(1, 1000]", [](double v) { return v > 1 && v <= 1000; },
   "a transfer this many times off its prediction is a suspect change",
   [](const ScheduleConfig& c) { return c.link.change_factor; },
   [](ScheduleConfig& c, double v) { c.link.change_factor = v; }},
  {"change_run", true, "[1, window]", [](double v) { return v >= 1 && v <= 1024; },
   "suspects in a row (same direction) that restart a link's estimate",
   [](const ScheduleConfig& c) { return double(c.link.change_run); },
   [](ScheduleConfig& c, double v) { c.link.change_run = std::size_t(v); }},
  {"suspect_run", true, "[1, change_run]", [](double v) { return v >= 1 && v <= 1024; },
   "slower suspects in a row before a link is planned at their bandwidth (1: at the first slow transfer; "
   "change_run: only once the change is confirmed)",
   [](const ScheduleConfig& c) { return double(c.link.suspect_run); },
   [](ScheduleConfig& c, double v) { c.link.suspect_run = std::size_t(v); }},
  {"change_min_s", false, "[0, 10]", [](double v) { return v >= 0 && v <= 10; },
   "a suspect must also be off by more than this many seconds (jitter on tiny messages)",
   [](const ScheduleConfig& c) { return c.link.change_min_s; },
   [](ScheduleConfig& c, double v) { c.link.change_min_s = v; }},
  {"small_message_bytes", true, "[0, 1073741824]", [](double v) { return v >= 0 && v <= 1073741824.0; },
   "messages up to this size measure latency (probes)",
   [](const ScheduleConfig& c) { return c.link.small_message_bytes; },
   [](ScheduleConfig& c, double v) { c.link.small_message_bytes = v; }},
  {"receipts", true, "0 or 1", [](double v) { return v == 0 || v == 1; },
   "1: receivers report each receive's time, so that a late receiver is not taken for a slow link; "
   "0: links are judged by send times alone",
   [](const ScheduleConfig& c) { return c.receipts ? 1.0 : 0.0; },
   [](ScheduleConfig& c, double v) { c.receipts = v != 0; }},
  {"compute_window", true, "[1, 1024]", [](double v) { return v >= 1 && v <= 1024; },
   "steps in the median of the compute time per step",
   [](const ScheduleConfig& c) { return double(c.compute_window); },
   [](ScheduleConfig& c, double v) { c.compute_window = std::size_t(v); }},
};
// clang-format on

// Pairs that must be ordered: first <= second.
const std::pair<const char*, const char*> kOrdered[] = {
    {"min_ratio", "max_ratio"}, {"min_period", "max_period"}, {"change_run", "window"}, {"suspect_run", "change_run"}};

// Reports a fault at `where` (a line, or an item of the flag); never returns.
using Fail = std::function<void(int where, const std::string& reason)>;

constexpr LineFormat kScheduleFormat{.comment = '#', .raise = &raise_as<ScheduleError>};

const Knob* find_knob(std::string_view name) {
  for (const Knob& k : kKnobs)
    if (name == k.name) return &k;
  return nullptr;
}

std::string known_keys() {
  std::vector<std::string_view> names;
  for (const Knob& k : kKnobs) names.push_back(k.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string text_of(double v) { return fmt::format("{}", v); }

class Assigner {
 public:
  explicit Assigner(Fail fail) : fail_(std::move(fail)) {}

  [[noreturn]] void fail(int where, const std::string& reason) const {
    fail_(where, reason);
    throw ScheduleError(reason);  // not reached: fail_ throws with the place
  }

  void assign(std::string_view key, std::string_view value, int where) {
    const Knob* knob = find_knob(key);
    if (!knob) fail(where, fmt::format("unknown key '{}'; known keys: {}", key, known_keys()));
    if (const auto it = given_.find(knob->name); it != given_.end())
      fail(where, fmt::format("{} given twice (first at {})", key, it->second.second));
    if (value.empty()) fail(where, fmt::format("{}: missing value", key));
    double v = 0;
    if (!parse_number(value, v)) fail(where, fmt::format("{} = '{}': not a number", key, value));
    if (knob->integer && v != std::floor(v)) fail(where, fmt::format("{} = {}: must be an integer", key, value));
    if (!knob->in_range(v)) fail(where, fmt::format("{} = {}: out of range, must be in {}", key, value, knob->range));
    knob->set(config_, v);
    given_[knob->name] = {where, where_name_(where)};
  }

  // where_name(where) says where a key was given, for "given twice".
  void set_where_name(std::function<std::string(int)> f) { where_name_ = std::move(f); }

  ScheduleConfig finish() {
    for (const auto& [lo, hi] : kOrdered) {
      const double a = find_knob(lo)->get(config_), b = find_knob(hi)->get(config_);
      if (a <= b) continue;
      int where = 0;
      for (const char* k : {lo, hi})
        if (const auto it = given_.find(k); it != given_.end()) where = std::max(where, it->second.first);
      fail(where, fmt::format("{} {} > {} {}", lo, text_of(a), hi, text_of(b)));
    }
    return config_;
  }

 private:
  Fail fail_;
  std::function<std::string(int)> where_name_ = [](int w) { return fmt::format("{}", w); };
  ScheduleConfig config_;
  std::map<std::string, std::pair<int, std::string>> given_;  // key -> (where, how to name it)
};

}  // namespace

const std::vector<ScheduleSetting>& schedule_settings() {
  static const std::vector<ScheduleSetting> settings = [] {
    std::vector<ScheduleSetting> s;
    const ScheduleConfig defaults;
    for (const Knob& k : kKnobs)
      s.push_back({k.name, k.integer ? "integer" : "real", text_of(k.get(defaults)), k.range, k.help});
    return s;
  }();
  return settings;
}

namespace {
ScheduleConfig parse_lines(LineReader& reader) {
  Assigner a([&](int line, const std::string& reason) { reader.fail(line, reason); });
  a.set_where_name([](int line) { return fmt::format("line {}", line); });
  for (Line line; reader.next(line);) {
    const auto eq = line.text.find('=');
    if (eq == std::string_view::npos || trim(line.text.substr(0, eq)).empty())
      reader.fail(line.number, fmt::format("cannot read '{}'; expected 'key = value'", line.text));
    a.assign(trim(line.text.substr(0, eq)), trim(line.text.substr(eq + 1)), line.number);
  }
  ScheduleConfig c = a.finish();
  c.source = fmt::format("@{}", reader.path());
  return c;
}
}  // namespace

ScheduleConfig parse_schedule(std::istream& in, const std::string& path) {
  LineReader reader = LineReader::from_stream(in, path, kScheduleFormat);
  return parse_lines(reader);
}

ScheduleConfig read_schedule_file(const std::string& path) {
  LineReader reader = LineReader::from_file(path, "cannot open schedule file", kScheduleFormat);
  return parse_lines(reader);
}

ScheduleConfig parse_schedule_flag(const std::string& spec) {
  const std::string_view s = trim(spec);
  auto refuse = [&](const std::string& reason) { throw ScheduleError(fmt::format("schedule '{}': {}", spec, reason)); };
  if (s == "fixed") {
    ScheduleConfig c;
    c.mode = ScheduleMode::kFixed;
    c.source = "fixed";
    return c;
  }
  if (!s.empty() && s.front() == '@') {
    const std::string path(trim(s.substr(1)));
    if (path.empty()) refuse("no file name after '@'");
    return read_schedule_file(path);
  }
  const std::string_view head = s.substr(0, s.find(':'));
  if (head != "adaptive") {
    refuse(head == "fixed" ? "fixed takes no settings" : "expected fixed, adaptive, adaptive:key=value,... or @file");
  }
  std::vector<std::string_view> items;
  if (s.size() > head.size()) {
    std::string_view rest = s.substr(head.size() + 1);
    for (;;) {
      const auto comma = rest.find(',');
      items.push_back(trim(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  // The reasons name the key and value already.
  Assigner a([&](int, const std::string& reason) { refuse(reason); });
  a.set_where_name([&](int item) { return fmt::format("'{}'", items.at(item)); });
  for (std::size_t i = 0; i < items.size(); ++i) {
    const int where = static_cast<int>(i);
    const auto eq = items[i].find('=');
    if (eq == std::string_view::npos || trim(items[i].substr(0, eq)).empty())
      refuse(fmt::format("'{}': expected key=value", items[i]));
    a.assign(trim(items[i].substr(0, eq)), trim(items[i].substr(eq + 1)), where);
  }
  ScheduleConfig c = a.finish();
  c.source = spec;
  return c;
}

}  // namespace murmur::gossip::schedule
