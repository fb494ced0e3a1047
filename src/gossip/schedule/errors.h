// Faults of the world in the scheduler's configuration: a malformed schedule
// file (the message starts with "path:line: "), or a --schedule flag that
// does not parse (the message quotes the flag's value and the item at fault).
// Bugs (inputs that break an invariant, e.g. a negative transfer time) are
// MURMUR_CHECK failures, see common/check.h.
#pragma once

#include <stdexcept>

namespace murmur::gossip::schedule {

class ScheduleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace murmur::gossip::schedule
