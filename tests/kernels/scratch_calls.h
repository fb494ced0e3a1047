// Drives a CUB-shaped kernel call from a test: f(scratch, scratch_bytes) is
// called once with a null scratch pointer (the size query), then with scratch
// of the size it reported. Both helpers block until f returns and check the
// size query's status with a non-fatal gtest EXPECT.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "kernels/status.h"

namespace murmur::testing {

// For host kernels that may need scratch: allocates what the query asks for
// (at least one byte, so the pointer is never null) and returns f's status.
template <typename F>
kernels::Status run_host_scratch(F f) {
  std::size_t bytes = 0;
  EXPECT_EQ(f(nullptr, bytes), kernels::Status::kOk);
  std::vector<std::byte> scratch(std::max<std::size_t>(bytes, 1));
  return f(scratch.data(), bytes);
}

// For kernels that need no scratch (the layer kernels, host or device): the
// query must overwrite a non-zero start value with 0; then any non-null pointer
// does for the call.
template <typename F>
kernels::Status run_no_scratch(F f) {
  std::size_t bytes = 123;
  EXPECT_EQ(f(nullptr, bytes), kernels::Status::kOk);
  EXPECT_EQ(bytes, 0u);
  char dummy = 0;
  return f(&dummy, bytes);
}

}  // namespace murmur::testing
