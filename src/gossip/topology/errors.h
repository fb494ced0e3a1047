// Faults of the world in topologies: a malformed graph file, a generator
// asked for a graph that cannot exist (a 3-regular graph on 5 nodes, a
// hypercube on 12), a random graph that stays disconnected. (Bugs are
// MURMUR_CHECK failures, see common/check.h.)
//
// The message says what is wrong and what to do; for files it starts with
// "path:line: ".
#pragma once

#include <string>

#include "common/line_reader.h"

namespace murmur::gossip {

class TopologyError : public ParseError {
 public:
  // A fault that is not in a file (a generator's parameters, a flag): the
  // message is `message` alone.
  explicit TopologyError(const std::string& message) : ParseError("", 0, message) {}
  // A fault at path:line (line 0: the file as a whole).
  TopologyError(const std::string& path, int line, const std::string& reason) : ParseError(path, line, reason) {}
};

}  // namespace murmur::gossip
