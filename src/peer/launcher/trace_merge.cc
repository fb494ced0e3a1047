#include "peer/launcher/trace_merge.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

namespace murmur::peer::launcher {
namespace {

namespace fs = std::filesystem;

struct PeerTrace {
  std::string file;
  nlohmann::json events;
  std::string boot_id;
  std::int64_t origin_steady_ns = 0;
  std::int64_t origin_unix_ns = 0;
};

// One peer's file, or nullopt with the reason in `problem`.
std::optional<PeerTrace> read_peer_trace(const fs::path& path, std::string& problem) {
  std::ifstream in(path);
  if (!in) {
    problem = path.string() + ": cannot be read";
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    problem = path.string() + ": not JSON (a peer that died while writing it?)";
    return std::nullopt;
  }
  const auto other = j.find("otherData");
  const auto events = j.find("traceEvents");
  if (other == j.end() || events == j.end() || !events->is_array() || !other->contains("origin_steady_ns") ||
      !other->contains("origin_unix_ns") || !other->contains("boot_id")) {
    problem = path.string() + ": not a murmur trace (no otherData.origin_steady_ns/origin_unix_ns/boot_id)";
    return std::nullopt;
  }
  PeerTrace t;
  t.file = path.string();
  t.events = std::move(*events);
  t.boot_id = (*other)["boot_id"].get<std::string>();
  t.origin_steady_ns = (*other)["origin_steady_ns"].get<std::int64_t>();
  t.origin_unix_ns = (*other)["origin_unix_ns"].get<std::int64_t>();
  return t;
}

}  // namespace

TraceMergeResult merge_traces(const std::string& dir) {
  TraceMergeResult result;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("rank-") && name.ends_with(".json")) files.push_back(entry.path());
  }
  if (ec) throw std::runtime_error("trace: cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<PeerTrace> peers;
  for (const auto& f : files) {
    std::string problem;
    try {
      if (auto t = read_peer_trace(f, problem)) {
        peers.push_back(std::move(*t));
      } else {
        result.problems.push_back(problem);
      }
    } catch (const nlohmann::json::exception& e) {
      result.problems.push_back(f.string() + ": " + e.what());
    }
  }
  if (peers.empty())
    throw std::runtime_error("trace: no peer trace to merge in " + dir + " (rank-N.json files)" +
                             (result.problems.empty() ? "" : "; first problem: " + result.problems.front()));

  const bool one_host = std::all_of(peers.begin(), peers.end(), [&](const PeerTrace& t) {
    return !t.boot_id.empty() && t.boot_id == peers.front().boot_id;
  });
  auto origin = [one_host](const PeerTrace& t) { return one_host ? t.origin_steady_ns : t.origin_unix_ns; };
  std::int64_t base = std::numeric_limits<std::int64_t>::max();
  for (const auto& t : peers) base = std::min(base, origin(t));
  result.clock = one_host ? "steady clock (one host: every peer read the same CLOCK_MONOTONIC)"
                          : "wall clock (several hosts: aligned as well as their NTP keeps them)";

  result.path = (fs::path(dir) / "trace.json").string();
  std::ofstream out(result.path);
  if (!out) throw std::runtime_error("trace: cannot write " + result.path);
  out << "{\"displayTimeUnit\":\"ms\",\n\"otherData\":"
      << nlohmann::json{{"murmur_trace_merged", 1},
                        {"clock_alignment", result.clock},
                        {"origin_unix_ns", one_host ? std::int64_t{0} : base},
                        {"peers", peers.size()}}
             .dump()
      << ",\n\"traceEvents\":[\n";
  bool first = true;
  for (auto& t : peers) {
    const double shift_us = static_cast<double>(origin(t) - base) / 1000.0;
    for (auto& e : t.events) {
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() + shift_us;
      out << (first ? "" : ",\n") << e.dump();
      first = false;
    }
  }
  out << "\n]}\n";
  out.close();
  if (!out) throw std::runtime_error("trace: writing " + result.path + " failed (disk full?)");
  result.peers = static_cast<int>(peers.size());
  return result;
}

}  // namespace murmur::peer::launcher
