#include "peer/api/scalar_gather.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "fabric/errors.h"
#include "fabric/rendezvous/client.h"
#include "peer/api/membership.h"

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

ScalarGather::ScalarGather(fabric::Group& group, std::string prefix, std::chrono::milliseconds timeout,
                           const Membership* membership)
    : group_(group), prefix_(std::move(prefix)), timeout_(timeout), membership_(membership) {}

gossip::View ScalarGather::start_view() const {
  if (membership_ != nullptr) return membership_->adopted();
  gossip::View all;
  for (int r = 0; r < group_.size(); ++r) all.members.push_back(r);
  return all;
}

std::vector<double> ScalarGather::all(double value, const std::string& what) {
  std::vector<double> values;
  for (auto& one : all(std::span<const double>(&value, 1), what)) values.push_back(one.front());
  return values;
}

std::vector<std::vector<double>> ScalarGather::all(std::span<const double> values, const std::string& what) {
  return gather(values, what, start_view()).values;
}

std::string ScalarGather::key_prefix(std::uint64_t sequence, const gossip::View& view) const {
  return prefix_ + std::to_string(sequence) + "/" + std::to_string(view.generation) + "/";
}

// Every member of a view that published `sequence` has its answer to
// `sequence - 1` (it publishes only after), and a member that joins goes on
// from its sponsor's count: so once this gather is answered, nobody reads
// the previous collective's keys (under any view's generation) again.
std::string ScalarGather::retired_prefix(std::uint64_t sequence) const {
  if (sequence == 0) return {};
  return prefix_ + std::to_string(sequence - 1) + "/";
}

void ScalarGather::publish(std::uint64_t sequence, const gossip::View& view, std::span<const double> values) {
  std::string text;
  for (double v : values) {
    char one[64];
    std::snprintf(one, sizeof(one), "%a", v);  // hex float: exact
    if (!text.empty()) text += ',';
    text += one;
  }
  group_.control().set(key_prefix(sequence, view) + std::to_string(view.position(group_.rank())), text);
}

bool ScalarGather::blocked_by_lost(std::uint64_t sequence, const gossip::View& view, const gossip::View& next) const {
  for (int k = 0; k < view.size(); ++k) {
    const int member = view.members[static_cast<std::size_t>(k)];
    if (next.contains(member)) continue;
    if (!group_.control().get(key_prefix(sequence, view) + std::to_string(k))) return true;
  }
  return false;
}

ScalarGather::Gathered ScalarGather::gather(std::span<const double> values, const std::string& what,
                                            const gossip::View& start) {
  const std::uint64_t sequence = sequence_++;
  gossip::View view = start;
  publish(sequence, view, values);
  const auto give_up = std::chrono::steady_clock::now() + timeout_;
  // Without membership one wait is the whole timeout; with it, short ones,
  // so that a lost member is noticed between them.
  const auto attempt = membership_ != nullptr ? std::chrono::milliseconds(200) : timeout_;
  for (;;) {
    try {
      const auto replies = group_.control().gather(key_prefix(sequence, view), static_cast<std::uint32_t>(view.size()),
                                                   attempt, retired_prefix(sequence));
      return {parse(replies, view, values.size(), what), view};
    } catch (const fabric::FabricError& e) {
      if (membership_ == nullptr) throw;
      if (std::chrono::steady_clock::now() >= give_up) throw_missing(sequence, view, what, e);
    }
    const auto later = membership_->committed_after(view.generation);
    if (!later.empty() && blocked_by_lost(sequence, view, later.front())) {
      view = later.front();
      publish(sequence, view, values);
    }
  }
}

// The last attempt's error says "timed out after 199 ms": the caller
// waited the whole timeout, for members that are alive (a lost one moves
// the gather to the next view), so what helps is who, and the usual why.
void ScalarGather::throw_missing(std::uint64_t sequence, const gossip::View& view, const std::string& what,
                                 const fabric::FabricError& last) const {
  std::string missing;
  for (int k = 0; k < view.size(); ++k) {
    if (group_.control().get(key_prefix(sequence, view) + std::to_string(k))) continue;
    const int r = view.members[static_cast<std::size_t>(k)];
    missing +=
        (missing.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " (" + group_.peers()[r].host + ")";
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout_.count()) / 1000);
  throw fabric::FabricError(what + ": " + (missing.empty() ? "some member" : missing) + " did not take part within " +
                            seconds + " s (collective " + std::to_string(sequence) + " over membership view " +
                            std::to_string(view.generation) +
                            "). Every member must make the same collectives in the same order; a member that "
                            "joined makes those of the step its first step() stood for (murmur/peer.h, "
                            "PeerConfig::join). Last wait: " +
                            last.what());
}

std::vector<std::vector<double>> ScalarGather::parse(const std::vector<std::string>& replies, const gossip::View& view,
                                                     std::size_t count, const std::string& what) const {
  std::vector<std::vector<double>> gathered;
  gathered.reserve(replies.size());
  for (std::size_t k = 0; k < replies.size(); ++k) {
    const std::string& reply = replies[k];
    auto theirs = parse_scalar_list(reply, count);
    if (!theirs) {
      const int r = view.members[k];
      throw std::runtime_error("rank " + std::to_string(r) + " (" + group_.peers()[r].host + ") contributed '" + reply +
                               "' to " + what + ", not " + std::to_string(count) + " finite number(s)");
    }
    gathered.push_back(std::move(*theirs));
  }
  return gathered;
}

}  // namespace murmur::peer
