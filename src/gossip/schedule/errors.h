// Faults of the world in the scheduler's configuration: a malformed schedule
// file (the message starts with "path:line: "), or a --schedule flag that
// does not parse (the message quotes the flag's value and the item at fault).
// Bugs (inputs that break an invariant, e.g. a negative transfer time) are
// MURMUR_CHECK failures, see common/check.h.
#pragma once

#include <string>

#include "common/line_reader.h"

namespace murmur::gossip::schedule {

class ScheduleError : public ParseError {
 public:
  // A fault that is not in a file (a generator's parameters, a flag): the
  // message is `message` alone.
  explicit ScheduleError(const std::string& message) : ParseError("", 0, message) {}
  // A fault at path:line (line 0: the file as a whole).
  ScheduleError(const std::string& path, int line, const std::string& reason) : ParseError(path, line, reason) {}
};

}  // namespace murmur::gossip::schedule
