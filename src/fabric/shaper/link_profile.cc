#include "fabric/shaper/link_profile.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "common/text.h"

namespace murmur::fabric::shaper {
namespace {

using namespace std::chrono_literals;

constexpr double kGbit = 1e9 / 8;  // bytes per second in one Gbit/s

// The named profiles. One-way latencies are what a message of a few bytes
// sees end to end through the software stack each fabric is used with, not
// the wire alone; that is what the scheduler will measure on real hardware.
struct NamedProfile {
  std::string_view name;
  LinkProfile profile;
};
const std::array<NamedProfile, 6> kNamed{{
    // 10GbE through the kernel TCP stack: netperf TCP_RR round trips on
    // commodity 10GbE NICs with default interrupt coalescing are ~40-60 us
    // (one switch hop adds ~1 us store-and-forward for a 1500 B frame), so
    // ~25 us one way, the middle of the usual 20-50 us range.
    {"10gbe", {25us, 10 * kGbit, 0ns}},
    // 100GbE, still kernel TCP: the NIC serialises 10x faster and modern
    // NICs coalesce less, but the socket stack dominates small messages;
    // tuned hosts report ~15-25 us round trips, so ~10 us one way.
    {"100gbe", {10us, 100 * kGbit, 0ns}},
    // InfiniBand HDR100 with verbs: ib_send_lat reports ~1.0-1.1 us for
    // small messages; libfabric's rxm layer adds a few hundred ns, so
    // 1.5 us. 100 Gbit/s is the nominal rate (measured ~12 GB/s).
    {"ib-hdr100", {1500ns, 100 * kGbit, 0ns}},
    // A cross-region WAN path: 1 Gbit/s, 20 ms one way (40 ms RTT, e.g.
    // US east-west coast is 60-70 ms, within Europe 20-40 ms), with 1 ms
    // of queueing jitter.
    {"wan", {20ms, 1 * kGbit, 1ms}},
    {"none", {}},
    {"loopback", {}},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "12.5ms" into the number 12.5 and the unit "ms". Throws ProfileError
// with a reason when there is no number or it is negative.
std::pair<double, std::string_view> split_number(std::string_view text) {
  text = trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value)) {
    throw ProfileError(fmt::format("expected a number followed by a unit, got '{}'", text));
  }
  if (value < 0) throw ProfileError(fmt::format("negative value '{}'", text));
  return {value, trim(std::string_view(end, text.data() + text.size() - end))};
}

double parse_rate(std::string_view text) {
  if (lower(trim(text)) == "unlimited") return 0;
  auto [value, unit] = split_number(text);
  if (unit.ends_with("/s")) unit.remove_suffix(2);
  if (value == 0 && unit.empty()) return 0;
  static constexpr std::array<std::pair<std::string_view, double>, 5> kBits{
      {{"bit", 1.0 / 8}, {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8}, {"tbit", 1e12 / 8}}};
  static constexpr std::array<std::pair<std::string_view, double>, 6> kBytes{
      {{"B", 1}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}}};
  const std::string unit_lower = lower(unit);
  for (const auto& [name, scale] : kBits) {
    if (unit_lower == name) return value * scale;
  }
  for (const auto& [name, scale] : kBytes) {
    if (unit == name) return value * scale;
  }
  constexpr const char* kExpected = "(expected bit, kbit, mbit, gbit, tbit, or B, kB, MB, GB, TB for bytes per second)";
  if (unit.empty()) throw ProfileError(fmt::format("missing unit {}", kExpected));
  throw ProfileError(fmt::format("unknown unit '{}' {}", unit, kExpected));
}

std::optional<LinkProfile> named(std::string_view name) {
  const std::string key = lower(name);
  for (const auto& entry : kNamed) {
    if (entry.name == key) return entry.profile;
  }
  return std::nullopt;
}

std::string format_duration(std::chrono::nanoseconds d) {
  const auto ns = d.count();
  if (ns != 0 && ns % 1'000'000'000 == 0) return fmt::format("{}s", ns / 1'000'000'000);
  if (ns != 0 && ns % 1'000'000 == 0) return fmt::format("{}ms", ns / 1'000'000);
  if (ns != 0 && ns % 1'000 == 0) return fmt::format("{}us", ns / 1'000);
  return fmt::format("{}ns", ns);
}

}  // namespace

std::chrono::nanoseconds parse_duration(std::string_view text) {
  auto [value, unit] = split_number(text);
  double scale = 0;
  const std::string u = lower(unit);
  if (u == "ns")
    scale = 1;
  else if (u == "us")
    scale = 1e3;
  else if (u == "ms")
    scale = 1e6;
  else if (u == "s")
    scale = 1e9;
  else if (u == "min")
    scale = 60e9;
  else if (u.empty() && value == 0)
    scale = 1;
  else if (u.empty())
    throw ProfileError("missing unit (expected ns, us, ms, s, min)");
  else
    throw ProfileError(fmt::format("unknown unit '{}' (expected ns, us, ms, s, min)", unit));
  const double ns = value * scale;
  // ~292 years fits in int64 nanoseconds; anything near that is a typo.
  if (ns > 1e17) throw ProfileError(fmt::format("duration '{}' is too large", trim(text)));
  return std::chrono::nanoseconds(std::llround(ns));
}

LinkProfile parse_link_profile(std::string_view spec) {
  const std::string context = fmt::format("link profile '{}': ", trim(spec));
  LinkProfile profile;
  bool seen_lat = false, seen_bw = false, seen_jitter = false, seen_uplink = false;
  std::string_view rest = trim(spec);
  if (rest.empty()) throw ProfileError("empty link profile (expected a name such as 10gbe, or lat=..,bw=..)");
  for (bool first = true;; first = false) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) throw ProfileError(fmt::format("{}empty item", context));
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      auto base = named(item);
      if (!base) {
        throw ProfileError(
            fmt::format("{}unknown profile '{}' (expected 10gbe, 100gbe, ib-hdr100, wan, none, "
                        "loopback, or items like lat=50us,bw=10gbit,jitter=5us,uplink=10gbit)",
                        context, item));
      }
      if (!first) {
        throw ProfileError(
            fmt::format("{}a named profile ('{}') may only come first, before key=value items", context, item));
      }
      profile = *base;
    } else {
      const std::string key = lower(trim(item.substr(0, eq)));
      const std::string_view value = item.substr(eq + 1);
      try {
        auto once = [&](bool& seen) {
          if (seen) throw ProfileError(fmt::format("'{}' given twice", key));
          seen = true;
        };
        if (key == "lat" || key == "latency") {
          once(seen_lat);
          profile.latency = parse_duration(value);
        } else if (key == "bw" || key == "bandwidth") {
          once(seen_bw);
          profile.bytes_per_second = parse_rate(value);
        } else if (key == "jitter") {
          once(seen_jitter);
          profile.jitter = parse_duration(value);
        } else if (key == "uplink") {
          once(seen_uplink);
          profile.uplink_bytes_per_second = parse_rate(value);
        } else {
          throw ProfileError(fmt::format("unknown key '{}' (expected lat, bw, jitter, uplink)", key));
        }
      } catch (const ProfileError& e) {
        throw ProfileError(fmt::format("{}{}: {}", context, item, e.what()));
      }
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return profile;
}

std::string to_string(const LinkProfile& profile) {
  auto rate = [](double bytes_per_second) {
    return bytes_per_second > 0 ? fmt::format("{:.6g}mbit", bytes_per_second * 8 / 1e6) : std::string("unlimited");
  };
  std::string text = fmt::format("lat={},bw={},jitter={}", format_duration(profile.latency),
                                 rate(profile.bytes_per_second), format_duration(profile.jitter));
  // Only when set: an edge without one bypasses the uplink, and logs of
  // profiles without it read as they always have.
  if (profile.uplink_bytes_per_second > 0) text += ",uplink=" + rate(profile.uplink_bytes_per_second);
  return text;
}

}  // namespace murmur::fabric::shaper
