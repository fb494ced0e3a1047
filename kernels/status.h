// Status codes returned by every kernel, CPU and CUDA alike.
#pragma once

namespace murmur::kernels {

enum class Status {
  kOk = 0,
  kInvalidArgument,  // a size or parameter the kernel cannot take (a bug of the caller)
  kScratchTooSmall,  // scratch_bytes below what the size query returned
  kMalformed,        // encoded input that breaks its format (from the network)
  kCudaError,        // a CUDA runtime call failed; see cudaGetLastError
  kUnsupported,      // built without the backend asked for
};

const char* to_string(Status s);

}  // namespace murmur::kernels
