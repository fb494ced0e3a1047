// A round that failed on an algorithm's communication thread surfaces on the
// caller's thread (its next step()); this logs it once, naming the
// algorithm, and rethrows it. Shared by RoundAlgorithm and
// GradientAlgorithm, whose background rounds fail the same way.
#pragma once

#include <exception>
#include <string>

#include "common/log.h"

namespace murmur::gossip {

[[noreturn]] inline void rethrow_round_failure(const std::string& algorithm, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    gossip_log().error("{}: round failed: {}", algorithm, e.what());
  } catch (...) {
    gossip_log().error("{}: round failed", algorithm);
  }
  std::rethrow_exception(error);
}

}  // namespace murmur::gossip
