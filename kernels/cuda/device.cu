#include <cuda_runtime.h>

#include "kernels/compress.h"

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

}  // namespace murmur::kernels
