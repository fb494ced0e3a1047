// Internal: turns a kernel's status into the model's error kinds.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

#include "common/check.h"
#include "kernels/status.h"

namespace murmur::peer::model::detail {

// kOk: nothing. kCudaError: std::runtime_error naming the call (the device
// failed, not our logic). Anything else: the caller passed what the kernel
// cannot take, a bug (InvariantError with the caller's file:line).
inline void check_kernel(kernels::Status s, const char* call,
                         std::source_location where = std::source_location::current()) {
  if (s == kernels::Status::kOk) return;
  if (s == kernels::Status::kCudaError) throw std::runtime_error(std::string("CUDA error in kernel ") + call);
  ::murmur::detail::check_failed(where.file_name(), static_cast<int>(where.line()),
                                 std::string(call) + " returned " + kernels::to_string(s));
}

}  // namespace murmur::peer::model::detail
