#include "tests/support/wait.h"

#include <thread>

namespace murmur::testing {

bool wait_until(const std::function<bool()>& condition, Clock::time_point deadline, Clock::duration poll) {
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(poll);
  }
  return condition();
}

}  // namespace murmur::testing
