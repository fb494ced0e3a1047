// cuda_device_available() for builds without CUDA (kernels/cuda/device.cu
// defines it otherwise).
#include "kernels/compress.h"

namespace murmur::kernels {
bool cuda_device_available() { return false; }
}  // namespace murmur::kernels
