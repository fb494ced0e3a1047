// ShaperConfig: which LinkProfile each directed edge (src -> dst) has, and
// how that changes over time. The file format is documented in
// docs/link-profiles.md; in short:
//
//   # comment
//   default 10gbe                       profile of every edge not overridden
//   edge 0 3 lat=1ms,bw=1gbit           undirected: 0->3 and 3->0
//   edge 0->3 wan                       directed: 0->3 only
//   at 30s edge 0 3 lat=1ms,bw=100mbit  from 30 s after start
//   at 60s edge 0 3 default             drop the override again
//   at 90s default 100gbe
//
// Lookup order for (src, dst): a directed override src->dst, else an
// undirected override {src, dst}, else the default. Scheduled statements
// apply in time order (file order for equal times) on top of the initial
// ones, each replacing what its slot held.
//
// Value type; const methods are thread-safe.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/request.h"
#include "fabric/shaper/link_profile.h"

namespace murmur::fabric::shaper {

// One statement: set the default, or set or clear an edge's override.
struct ShaperRule {
  enum class Scope { kDefault, kEdge, kDirectedEdge };
  Scope scope = Scope::kDefault;
  int a = -1;  // kEdge: the two ranks; kDirectedEdge: a -> b
  int b = -1;
  // Absent for an edge means "follow the default" (written `default`).
  bool has_profile = true;
  LinkProfile profile;
};

struct ScheduledRule {
  Clock::duration at{0};  // since the shaped transport was created
  ShaperRule rule;
};

struct ShaperConfig {
  LinkProfile default_profile;
  std::vector<ShaperRule> edges;        // initial overrides, in order
  std::vector<ScheduledRule> schedule;  // sorted by `at`, stable

  // The profile of src -> dst in force `since_start` after creation.
  LinkProfile profile_at(int src, int dst, Clock::duration since_start) const;

  // True when no edge is ever shaped (a shaper would only add a thread).
  bool is_identity() const;

  // Highest rank named in an edge, or -1; lets callers check it against the
  // group size.
  int max_rank() const;
};

// The value of a `--profile` flag: one link profile spec for every edge.
// Throws ProfileError.
ShaperConfig shaper_config_from_flag(std::string_view value);

// Parses shaper-file text; `origin` (a path) prefixes errors as
// "origin:line: reason". Throws ProfileError.
ShaperConfig parse_shaper_config(std::string_view text, const std::string& origin);

// Reads and parses a shaper file. Throws ProfileError ("path: cannot read")
// when it cannot be opened.
ShaperConfig load_shaper_config(const std::filesystem::path& path);

}  // namespace murmur::fabric::shaper
