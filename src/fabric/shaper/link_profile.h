// LinkProfile: what one emulated link costs, and the parser for the profile
// strings users write on the command line and in shaper files.
//
// A spec is a named profile, a list of key=value items, or a name followed by
// items that override it:
//   10gbe | 100gbe | ib-hdr100 | wan | none | loopback
//   lat=50us,bw=10gbit,jitter=5us
//   10gbe,jitter=5us
//   10gbe,uplink=10gbit      (the edge also passes through the sender's uplink)
// Durations take ns, us, ms, s (decimal numbers allowed: 1.5ms). Bandwidths
// are per second and decimal: bit, kbit, mbit, gbit, tbit (100mbit = 1e8
// bit/s) or bytes B, kB, MB, GB, TB (1GB = 1e9 bytes/s); an optional "/s"
// suffix is accepted; bw=0 or bw=unlimited means no bandwidth limit. Unit
// names are case-insensitive except that byte units end in a capital B (so
// that "10gb" is refused rather than guessed).
//
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/line_reader.h"

namespace murmur::fabric::shaper {

struct LinkProfile {
  // One-way delay added to every message, after it has been serialised.
  std::chrono::nanoseconds latency{0};
  // Serialisation rate of the link; 0 means unlimited.
  double bytes_per_second = 0;
  // Extra delay drawn uniformly from [0, jitter] per message. Jitter never
  // reorders messages to one destination (see shaped_transport.h).
  std::chrono::nanoseconds jitter{0};
  // The sending rank's uplink (its NIC), one per rank and shared by every
  // edge whose profile sets it: sends on those edges serialise through it at
  // this rate as well as through their own link. 0: the edge bypasses it
  // (edges are then independent, as between ranks on one host).
  double uplink_bytes_per_second = 0;

  bool shapes() const {
    return latency.count() > 0 || bytes_per_second > 0 || jitter.count() > 0 || uplink_bytes_per_second > 0;
  }
  friend bool operator==(const LinkProfile&, const LinkProfile&) = default;
};

// A malformed profile spec or shaper file: a fault of the user's input. The
// message names the spec (and, for files, path:line) and says what is wrong.
class ProfileError : public ParseError {
 public:
  // A fault that is not in a file (a generator's parameters, a flag): the
  // message is `message` alone.
  explicit ProfileError(const std::string& message) : ParseError("", 0, message) {}
  // A fault at path:line (line 0: the file as a whole).
  ProfileError(const std::string& path, int line, const std::string& reason) : ParseError(path, line, reason) {}
};

// Parses `spec` as described above. Throws ProfileError, e.g.
//   link profile 'lat=50us,bw=10gbt': bw=10gbt: unknown unit 'gbt' (expected
//   bit, kbit, mbit, gbit, tbit, or B, kB, MB, GB, TB for bytes per second)
LinkProfile parse_link_profile(std::string_view spec);

// Parses a duration such as "30s", "1.5ms", "250us", "0". Throws ProfileError
// whose message is the reason only (callers add the context).
std::chrono::nanoseconds parse_duration(std::string_view text);

// "lat=20us,bw=10gbit,jitter=0ns"-style text for logs; parse_link_profile
// reads it back.
std::string to_string(const LinkProfile& profile);

}  // namespace murmur::fabric::shaper
