// Device queries and copies for builds without CUDA (kernels/cuda/device.cu
// defines them otherwise): there is no device, so nothing is device memory.
#include "kernels/compress.h"
#include "kernels/memory.h"

namespace murmur::kernels {

bool cuda_device_available() { return false; }

bool is_device_pointer(const void*) { return false; }

Status copy_device_to_host(void*, const void*, std::size_t) { return Status::kUnsupported; }

Status copy_host_to_device(void*, const void*, std::size_t) { return Status::kUnsupported; }

}  // namespace murmur::kernels
