// Checks of a Chrome trace-event file for the trace tests: the nesting of
// each thread's spans and the causal order of messages between processes.
// Each returns the problems found, one line each naming the event; empty:
// none.
#pragma once

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace murmur::testing {

// Spans ("X") of one thread must nest: each one either ends before the next
// begins or contains it. Timestamps are microseconds printed to the
// nanosecond, so rounding may shift an end by 2 ns.
inline std::vector<std::string> nesting_problems(const nlohmann::json& events) {
  std::map<std::pair<long, long>, std::vector<std::pair<double, double>>> spans;  // (pid, tid) -> [begin, end]
  for (const auto& e : events)
    if (e.value("ph", "") == "X")
      spans[{e["pid"].get<long>(), e["tid"].get<long>()}].emplace_back(e["ts"].get<double>(),
                                                                       e["ts"].get<double>() + e["dur"].get<double>());
  constexpr double kRounding = 0.002;
  std::vector<std::string> problems;
  for (auto& [thread, list] : spans) {
    // Outer spans first when two begin together.
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open_ends;
    for (const auto& [begin, end] : list) {
      while (!open_ends.empty() && open_ends.back() <= begin + kRounding) open_ends.pop_back();
      if (!open_ends.empty() && end > open_ends.back() + kRounding)
        problems.push_back("pid " + std::to_string(thread.first) + " tid " + std::to_string(thread.second) +
                           ": span [" + std::to_string(begin) + ", " + std::to_string(end) +
                           "] overlaps its parent's end " + std::to_string(open_ends.back()));
      open_ends.push_back(end);
    }
  }
  return problems;
}

// Every message: its "b" before its "e"; and across processes, a receive
// (pid b from peer a, tag t) cannot end before the matching send (pid a to
// peer b, tag t, in posting order) began. A merge with misaligned clocks
// fails this.
inline std::vector<std::string> message_order_problems(const nlohmann::json& events, int* matched = nullptr) {
  std::map<std::string, double> begins;
  using Key = std::tuple<long, long, std::string>;  // (from, to, tag)
  std::map<Key, std::vector<double>> send_begins, recv_ends;
  std::map<std::string, nlohmann::json> begin_events;
  std::vector<std::string> problems;
  for (const auto& e : events) {
    const std::string ph = e.value("ph", "");
    if (ph != "b" && ph != "e") continue;
    const std::string id = std::to_string(e["pid"].get<long>()) + ":" + e["id"].get<std::string>();
    if (ph == "b") {
      begins[id] = e["ts"].get<double>();
      begin_events[id] = e;
      continue;
    }
    const auto b = begins.find(id);
    if (b == begins.end()) {
      problems.push_back("message " + id + " ends without a begin");
      continue;
    }
    const double end = e["ts"].get<double>();
    if (end < b->second) problems.push_back("message " + id + " ends before it begins");
    const auto& begin = begin_events[id];
    const long pid = begin["pid"].get<long>();
    const long peer = begin["args"].value("peer", -1L);
    const std::string tag = begin["args"].value("tag", std::string());
    if (begin["cat"] == "send") send_begins[{pid, peer, tag}].push_back(b->second);
    if (begin["cat"] == "recv") recv_ends[{peer, pid, tag}].push_back(end);
  }
  int count = 0;
  for (auto& [key, ends] : recv_ends) {
    auto sends = send_begins[key];
    std::sort(sends.begin(), sends.end());
    std::sort(ends.begin(), ends.end());
    for (std::size_t k = 0; k < std::min(sends.size(), ends.size()); ++k, ++count)
      if (ends[k] < sends[k])
        problems.push_back("receive at rank " + std::to_string(std::get<1>(key)) + " from " +
                           std::to_string(std::get<0>(key)) + " tag " + std::get<2>(key) + " ended at " +
                           std::to_string(ends[k]) + " us, before its send began at " + std::to_string(sends[k]));
  }
  if (matched != nullptr) *matched = count;
  return problems;
}

}  // namespace murmur::testing
