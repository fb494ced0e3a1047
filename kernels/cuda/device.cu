#include <cuda_runtime.h>

#include "kernels/compress.h"
#include "kernels/memory.h"

namespace murmur::kernels {

bool cuda_device_available() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // 35 (insufficient driver) and 100 (no device) are the ordinary "no GPU
    // here" answers; anything else is equally a reason to stay on the CPU.
    cudaGetLastError();  // clear the sticky-free error state
    return false;
  }
  return count > 0;
}

bool is_device_pointer(const void* p) {
  if (p == nullptr) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // no driver / no device: nothing is device memory
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

Status copy_device_to_host(void* host, const void* device, std::size_t bytes) {
  return cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? Status::kOk : Status::kCudaError;
}

Status copy_host_to_device(void* device, const void* host, std::size_t bytes) {
  // From pageable memory cudaMemcpy returns once the bytes are staged for
  // DMA, not when they are on the device; the models' streams do not wait
  // for the default stream (they are non-blocking), so a kernel launched
  // next could read the old values. Wait for the copy itself.
  if (cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) return Status::kCudaError;
  return cudaStreamSynchronize(nullptr) == cudaSuccess ? Status::kOk : Status::kCudaError;
}

}  // namespace murmur::kernels
