#include "fabric/shaper/shaper_config.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <fmt/format.h>

#include "common/line_reader.h"

namespace murmur::fabric::shaper {
namespace {

constexpr LineFormat kShaperFormat{.comment = '#', .raise = &raise_as<ProfileError>};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Whitespace-separated tokens of one line; the tail (a profile spec) may
// contain spaces after commas, so it is taken whole with rest().
class Cursor {
 public:
  explicit Cursor(std::string_view line) : rest_(trim(line)) {}
  std::string_view next() {
    std::size_t end = 0;
    while (end < rest_.size() && !is_space(rest_[end])) ++end;
    std::string_view token = rest_.substr(0, end);
    rest_ = trim(rest_.substr(end));
    return token;
  }
  std::string_view peek() const { return Cursor(rest_).next(); }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

int parse_rank(std::string_view token) {
  int rank = -1;
  if (!parse_number(token, rank) || rank < 0) {
    throw ProfileError(fmt::format("bad rank '{}' (expected a non-negative integer)", token));
  }
  return rank;
}

// `edge` has been read; parses "<a> <b>", "<a>-><b>" or "<a> -> <b>".
ShaperRule parse_edge_ranks(Cursor& cursor) {
  ShaperRule rule;
  std::string_view first = cursor.next();
  if (first.empty()) throw ProfileError("'edge' needs two ranks and a profile");
  if (auto arrow = first.find("->"); arrow != std::string_view::npos) {
    rule.scope = ShaperRule::Scope::kDirectedEdge;
    rule.a = parse_rank(first.substr(0, arrow));
    rule.b = parse_rank(first.substr(arrow + 2));
  } else {
    rule.a = parse_rank(first);
    std::string_view second = cursor.next();
    rule.scope = ShaperRule::Scope::kEdge;
    if (second == "->") {
      rule.scope = ShaperRule::Scope::kDirectedEdge;
      second = cursor.next();
    } else if (second.starts_with("->")) {
      rule.scope = ShaperRule::Scope::kDirectedEdge;
      second.remove_prefix(2);
    }
    if (second.empty()) throw ProfileError("'edge' needs two ranks and a profile");
    rule.b = parse_rank(second);
  }
  if (rule.a == rule.b) {
    throw ProfileError(
        fmt::format("edge {} {} joins a rank to itself (sends to self are never shaped)", rule.a, rule.b));
  }
  return rule;
}

ShaperRule parse_statement(Cursor& cursor) {
  const std::string_view directive = cursor.next();
  ShaperRule rule;
  if (directive == "default") {
    rule.scope = ShaperRule::Scope::kDefault;
  } else if (directive == "edge") {
    rule = parse_edge_ranks(cursor);
  } else if (directive == "at") {
    throw ProfileError("'at' must be followed by a time and a default or edge statement, not another 'at'");
  } else {
    throw ProfileError(fmt::format("unknown directive '{}' (expected default, edge or at)", directive));
  }
  const std::string_view spec = cursor.rest();
  if (spec.empty()) throw ProfileError(fmt::format("'{}' needs a profile", directive));
  if (spec == "default") {
    if (rule.scope == ShaperRule::Scope::kDefault) {
      throw ProfileError("'default default' names no profile");
    }
    rule.has_profile = false;
  } else {
    rule.profile = parse_link_profile(spec);
  }
  return rule;
}

bool matches(const ShaperRule& rule, int src, int dst) {
  switch (rule.scope) {
    case ShaperRule::Scope::kDefault:
      return false;
    case ShaperRule::Scope::kEdge:
      return (rule.a == src && rule.b == dst) || (rule.a == dst && rule.b == src);
    case ShaperRule::Scope::kDirectedEdge:
      return rule.a == src && rule.b == dst;
  }
  return false;
}

// One statement: "[at TIME] default|edge ...". Throws ProfileError with the reason only.
void parse_line(std::string_view text, ShaperConfig& config) {
  Cursor cursor(text);
  if (cursor.peek() == "at") {
    cursor.next();
    const std::string_view when = cursor.next();
    if (when.empty()) throw ProfileError("'at' needs a time, e.g. 'at 30s edge 0 3 wan'");
    Clock::duration at;
    try {
      at = std::chrono::duration_cast<Clock::duration>(parse_duration(when));
    } catch (const ProfileError& e) {
      throw ProfileError(fmt::format("bad time '{}': {}", when, e.what()));
    }
    config.schedule.push_back({at, parse_statement(cursor)});
  } else {
    ShaperRule rule = parse_statement(cursor);
    if (rule.scope == ShaperRule::Scope::kDefault) {
      config.default_profile = rule.profile;
    } else {
      config.edges.push_back(rule);
    }
  }
}

ShaperConfig parse_shaper_lines(LineReader reader) {
  ShaperConfig config;
  for (Line line; reader.next(line);) {
    try {
      parse_line(line.text, config);
    } catch (const ProfileError& e) {
      reader.fail(line.number, e.what());
    }
  }
  std::stable_sort(config.schedule.begin(), config.schedule.end(),
                   [](const ScheduledRule& x, const ScheduledRule& y) { return x.at < y.at; });
  return config;
}

}  // namespace

LinkProfile ShaperConfig::profile_at(int src, int dst, Clock::duration since_start) const {
  // Replayed per lookup: files hold a handful of statements, and this keeps
  // the config a plain value. TODO(perf): precompute if schedules grow.
  LinkProfile fallback = default_profile;
  std::optional<LinkProfile> undirected, directed;
  auto apply = [&](const ShaperRule& rule) {
    if (rule.scope == ShaperRule::Scope::kDefault) {
      fallback = rule.profile;
      return;
    }
    if (!matches(rule, src, dst)) return;
    auto& slot = rule.scope == ShaperRule::Scope::kEdge ? undirected : directed;
    slot = rule.has_profile ? std::optional<LinkProfile>(rule.profile) : std::nullopt;
  };
  for (const auto& rule : edges) apply(rule);
  for (const auto& entry : schedule) {
    if (entry.at > since_start) break;
    apply(entry.rule);
  }
  if (directed) return *directed;
  if (undirected) return *undirected;
  return fallback;
}

bool ShaperConfig::is_identity() const {
  if (default_profile.shapes()) return false;
  for (const auto& rule : edges) {
    if (rule.has_profile && rule.profile.shapes()) return false;
  }
  for (const auto& entry : schedule) {
    if (entry.rule.has_profile && entry.rule.profile.shapes()) return false;
  }
  return true;
}

int ShaperConfig::max_rank() const {
  int highest = -1;
  auto see = [&](const ShaperRule& rule) {
    if (rule.scope != ShaperRule::Scope::kDefault) highest = std::max({highest, rule.a, rule.b});
  };
  for (const auto& rule : edges) see(rule);
  for (const auto& entry : schedule) see(entry.rule);
  return highest;
}

ShaperConfig shaper_config_from_flag(std::string_view value) {
  ShaperConfig config;
  try {
    config.default_profile = parse_link_profile(value);
  } catch (const ProfileError& e) {
    throw ProfileError(fmt::format("--profile: {}", e.what()));
  }
  return config;
}

ShaperConfig parse_shaper_config(std::string_view text, const std::string& origin) {
  return parse_shaper_lines(LineReader(std::string(text), origin, kShaperFormat));
}

ShaperConfig load_shaper_config(const std::filesystem::path& path) {
  return parse_shaper_lines(LineReader::from_file(path.string(), "cannot read shaper file", kShaperFormat));
}

}  // namespace murmur::fabric::shaper
