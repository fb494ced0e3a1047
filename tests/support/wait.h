// wait_until: for tests that must wait for a condition nobody notifies them
// of (another process's output, a server's counter, a receipt arriving on a
// progress thread). Waiting with a deadline instead of a bare sleep makes a
// test as fast as the condition allows and fail, not flake, when it never
// holds.
//
// A sleep stays right where the delay itself is what the test is about (a
// late sender, an idle transport measured over three seconds); see
// docs/testing.md.
//
// Blocking: polls `condition` every `poll` (a short sleep, no spinning) until
// it holds or `deadline` passes. Thread safety: the caller's; `condition` runs
// on the calling thread only.
#pragma once

#include <chrono>
#include <functional>

namespace murmur::testing {

using Clock = std::chrono::steady_clock;

// True as soon as `condition()` is; false if it still is not at `deadline`
// (checked once more then, so a condition met just in time counts).
bool wait_until(const std::function<bool()>& condition, Clock::time_point deadline,
                Clock::duration poll = std::chrono::milliseconds(5));

// The same with a timeout from now.
inline bool wait_for(const std::function<bool()>& condition, Clock::duration timeout,
                     Clock::duration poll = std::chrono::milliseconds(5)) {
  return wait_until(condition, Clock::now() + timeout, poll);
}

}  // namespace murmur::testing
