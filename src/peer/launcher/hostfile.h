// Host lists for murmur-run: hostfiles and the -H flag.
//
// Hostfile lines, one host each (Open MPI, DeepSpeed and Horovod styles):
//   nodeA slots=4            Open MPI / DeepSpeed; max_slots=N is accepted and ignored
//   nodeB:4                  Horovod
//   nodeC                    one slot
// '#' starts a comment; blank lines and surrounding whitespace are ignored.
// -H takes the Horovod form as a comma-separated list: "h1:4,h2:4,h3".
//
// Pure functions; thread-safe. Throw HostfileError on malformed input.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "common/line_reader.h"

namespace murmur::peer::launcher {

struct HostSlots {
  std::string host;
  int slots = 1;
  int line = 0;  // 1-based line in the hostfile, or item in the -H list
};

// Message: "<source>:<line>: <reason>: '<the line as written>'", e.g.
// "hosts.txt:3: bad slots count 'x' (expected a whole number from 1 to 65536): 'nodeA slots=x'";
// at line 0 (the file as a whole) "<source>: <reason>". line() is ParseError's.
class HostfileError : public ParseError {
 public:
  HostfileError(const std::string& source, int line, const std::string& reason, const std::string& text = "");
};

// Parses hostfile text; `source` names it in errors (normally its path).
std::vector<HostSlots> parse_hostfile(std::istream& in, const std::string& source);
// Reads and parses the file at `path`; an unreadable file is a HostfileError
// at line 0 naming the path and errno text.
std::vector<HostSlots> read_hostfile(const std::string& path);
// Parses the -H form "h1:4,h2:4,h3"; errors name the source "-H" and the
// 1-based item number as the line.
std::vector<HostSlots> parse_host_list(const std::string& list);

}  // namespace murmur::peer::launcher
