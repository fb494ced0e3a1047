// DeviceBuffer<T>: a test's device array, allocated with cudaMalloc and freed
// with cudaFree when it leaves scope. CUDA-only: include it inside
// `#if defined(MURMUR_HAVE_CUDA)`.
//
// Ownership: the buffer alone owns `ptr` (no copies, no moves); `ptr` is valid
// until the destructor runs. A count of 0 still allocates one element, so an
// empty input gets a real device address rather than null.
// Errors: a failed cudaMalloc or cudaMemcpy is a non-fatal gtest failure
// (EXPECT), so the test reports it and goes on; the destructor never throws.
// Blocking: construction from a host vector and host() are synchronous
// cudaMemcpy calls, which wait for earlier work on the default stream.
// Thread-safety: none; one test thread uses a buffer.
#pragma once

#if !defined(MURMUR_HAVE_CUDA)
#error "device_buffer.h needs CUDA: include it under #if defined(MURMUR_HAVE_CUDA)"
#endif

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace murmur::testing {

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  std::size_t n = 0;

  // Uninitialised device memory for `count` elements.
  explicit DeviceBuffer(std::size_t count) : n(count) {
    EXPECT_EQ(cudaMalloc(&ptr, std::max<std::size_t>(count, 1) * sizeof(T)), cudaSuccess);
  }
  // A device copy of `host`.
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    EXPECT_EQ(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // A host copy of the n elements.
  std::vector<T> host() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

}  // namespace murmur::testing
