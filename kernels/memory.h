// Host <-> device copies and pointer classification, for layers above the
// kernels that take "host or device" buffers (the embeddable Peer) without
// including CUDA headers themselves.
//
// Blocking: every call is synchronous (cudaMemcpy semantics): it returns
// when the bytes have arrived. Thread safety: any thread.
// Builds without CUDA: is_device_pointer() is false and the copies return
// Status::kUnsupported.
#pragma once

#include <cstddef>

#include "kernels/status.h"

namespace murmur::kernels {

// True when `p` is device (or managed) memory of the CUDA runtime. False for
// host memory, for null, and always when built without CUDA.
bool is_device_pointer(const void* p);

Status copy_device_to_host(void* host, const void* device, std::size_t bytes);
Status copy_host_to_device(void* device, const void* host, std::size_t bytes);

}  // namespace murmur::kernels
