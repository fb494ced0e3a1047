// Which sources of refused input were logged already, so that a flood from
// one address (20,000 forged connections) costs one log line, not 20,000,
// while each new address still gets its line. Counting is the caller's.
//
// Bounded: after kMaxSources distinct keys it says "no" to every new one
// (one line says so), so a flood from many addresses cannot grow it either.
// Thread-safe (one mutex, a leaf lock); never blocks on anything else.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace murmur {

class OncePerSource final {
 public:
  static constexpr std::size_t kMaxSources = 4096;

  // True the first time `key` (an address, or an address and a reason) is
  // seen, while fewer than kMaxSources keys are remembered.
  bool first(std::string_view key) {
    std::lock_guard lock(mutex_);
    if (seen_.size() >= kMaxSources) return false;
    return seen_.emplace(key).second;
  }

  // "10.0.0.7" from "10.0.0.7:40112" (also for IPv6, whose port follows
  // the last colon).
  static std::string_view address_of(std::string_view address_and_port) {
    const auto colon = address_and_port.rfind(':');
    return colon == std::string_view::npos ? address_and_port : address_and_port.substr(0, colon);
  }

 private:
  std::mutex mutex_;
  std::unordered_set<std::string> seen_;
};

}  // namespace murmur
