#include "fabric/shaper/shaper_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>

namespace murmur::fabric::shaper {
namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

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
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), rank);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size() || rank < 0) {
    throw ProfileError("bad rank '" + std::string(token) + "' (expected a non-negative integer)");
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
    throw ProfileError("edge " + std::to_string(rule.a) + " " + std::to_string(rule.b) +
                       " joins a rank to itself (sends to self are never shaped)");
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
    throw ProfileError("unknown directive '" + std::string(directive) + "' (expected default, edge or at)");
  }
  const std::string_view spec = cursor.rest();
  if (spec.empty()) throw ProfileError("'" + std::string(directive) + "' needs a profile");
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
    case ShaperRule::Scope::kDefault: return false;
    case ShaperRule::Scope::kEdge: return (rule.a == src && rule.b == dst) || (rule.a == dst && rule.b == src);
    case ShaperRule::Scope::kDirectedEdge: return rule.a == src && rule.b == dst;
  }
  return false;
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
    throw ProfileError(std::string("--profile: ") + e.what());
  }
  return config;
}

ShaperConfig parse_shaper_config(std::string_view text, const std::string& origin) {
  ShaperConfig config;
  int line_number = 0;
  for (std::size_t start = 0; start <= text.size();) {
    ++line_number;
    const std::size_t newline = text.find('\n', start);
    const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    Cursor cursor(line);
    if (cursor.rest().empty()) continue;
    try {
      if (cursor.peek() == "at") {
        cursor.next();
        const std::string_view when = cursor.next();
        if (when.empty()) throw ProfileError("'at' needs a time, e.g. 'at 30s edge 0 3 wan'");
        Clock::duration at;
        try {
          at = std::chrono::duration_cast<Clock::duration>(parse_duration(when));
        } catch (const ProfileError& e) {
          throw ProfileError("bad time '" + std::string(when) + "': " + e.what());
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
    } catch (const ProfileError& e) {
      throw ProfileError(origin + ":" + std::to_string(line_number) + ": " + e.what());
    }
  }
  std::stable_sort(config.schedule.begin(), config.schedule.end(),
                   [](const ScheduledRule& x, const ScheduledRule& y) { return x.at < y.at; });
  return config;
}

ShaperConfig load_shaper_config(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError(path.string() + ": cannot read shaper file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_shaper_config(text.str(), path.string());
}

}  // namespace murmur::fabric::shaper
