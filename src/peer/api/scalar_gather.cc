#include "peer/api/scalar_gather.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "fabric/rendezvous/client.h"

namespace murmur::peer {

std::optional<std::vector<double>> parse_scalar_list(const std::string& text, std::size_t count) {
  std::vector<double> values;
  const char* at = text.c_str();
  while (values.size() < count) {
    char* end = nullptr;
    const double v = std::strtod(at, &end);
    if (end == at || !std::isfinite(v)) return std::nullopt;
    values.push_back(v);
    at = end;
    if (values.size() < count) {
      if (*at != ',') return std::nullopt;
      ++at;
    }
  }
  if (*at != '\0') return std::nullopt;
  return values;
}

ScalarGather::ScalarGather(fabric::Group& group, std::string prefix, std::chrono::milliseconds timeout)
    : group_(group), prefix_(std::move(prefix)), timeout_(timeout) {}

std::vector<double> ScalarGather::all(double value, const std::string& what) {
  std::vector<double> values;
  for (auto& one : all(std::span<const double>(&value, 1), what)) values.push_back(one.front());
  return values;
}

std::vector<std::vector<double>> ScalarGather::all(std::span<const double> values, const std::string& what) {
  const std::uint64_t sequence = sequence_++;
  publish(sequence, values);
  return collect(sequence, values.size(), what);
}

void ScalarGather::publish(std::uint64_t sequence, std::span<const double> values) {
  std::string text;
  for (double v : values) {
    char one[64];
    std::snprintf(one, sizeof(one), "%a", v);  // hex float: exact
    if (!text.empty()) text += ',';
    text += one;
  }
  group_.control().set(prefix_ + std::to_string(sequence) + "/" + std::to_string(group_.rank()), text);
}

std::vector<std::vector<double>> ScalarGather::collect(std::uint64_t sequence, std::size_t count,
                                                       const std::string& what) {
  // One reply with every rank's value (not a round trip per rank).
  const auto replies = group_.control().gather(prefix_ + std::to_string(sequence) + "/",
                                               static_cast<std::uint32_t>(group_.size()), timeout_);
  std::vector<std::vector<double>> gathered;
  gathered.reserve(group_.size());
  for (int r = 0; r < group_.size(); ++r) {
    const std::string& reply = replies[static_cast<std::size_t>(r)];
    auto theirs = parse_scalar_list(reply, count);
    if (!theirs) {
      throw std::runtime_error("rank " + std::to_string(r) + " (" + group_.peers()[r].host + ") contributed '" + reply +
                               "' to " + what + ", not " + std::to_string(count) + " finite number(s)");
    }
    gathered.push_back(std::move(*theirs));
  }
  return gathered;
}

}  // namespace murmur::peer
