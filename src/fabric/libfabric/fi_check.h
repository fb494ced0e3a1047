// Checking libfabric return codes (fabtests FT_PRINTERR style): every failed
// fi_* call becomes a FabricError that names the call and fi_strerror.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <string>

#include "fabric/errors.h"

namespace murmur::fabric::libfabric {

// "<call>: <fi_strerror> (<code>)".
inline std::string fi_error_text(const char* call, long ret) {
  const int code = static_cast<int>(ret < 0 ? -ret : ret);
  return std::string(call) + ": " + fi_strerror(code) + " (" + std::to_string(ret) + ")";
}

// Throws FabricError unless `ret` is FI_SUCCESS (or a non-negative count).
inline void fi_check(long ret, const char* call) {
  if (ret < 0) throw FabricError(fi_error_text(call, ret));
}

}  // namespace murmur::fabric::libfabric
