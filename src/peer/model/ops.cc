#include "peer/model/ops.h"

#include <stdexcept>
#include <string>

#include "common/check.h"

namespace murmur::peer::model::detail {

std::unique_ptr<Ops> make_ops(Device device) { return device == Device::kCuda ? make_cuda_ops() : make_cpu_ops(); }

#if !defined(MURMUR_HAVE_CUDA)
std::unique_ptr<Ops> make_cuda_ops() {
  throw std::runtime_error(
      "device cuda asked for, but this murmur was built without CUDA (configure with -DMURMUR_CUDA=ON)");
}
#endif

}  // namespace murmur::peer::model::detail
