#include "kernels/status.h"

#include <bit>

#include "kernels/compress.h"

namespace murmur::kernels {

const char* to_string(Status s) {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kInvalidArgument:
      return "invalid argument";
    case Status::kScratchTooSmall:
      return "scratch too small";
    case Status::kMalformed:
      return "malformed input";
    case Status::kCudaError:
      return "CUDA error";
    case Status::kUnsupported:
      return "unsupported (backend not built)";
  }
  return "unknown status";
}

unsigned qsgd_bits(unsigned s) { return 1u + static_cast<unsigned>(std::bit_width(s)); }

std::size_t packed_bytes(std::size_t n, unsigned bits) { return (n / 8) * bits + ((n % 8) * bits + 7) / 8; }

}  // namespace murmur::kernels
