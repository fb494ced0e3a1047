#include "peer/model/blas_threads.h"

#include <cblas.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/check.h"

namespace murmur::peer::model {

void set_blas_threads(int n) {
  MURMUR_CHECK_GE(n, 1);
  openblas_set_num_threads(n);
}

int blas_threads_from_environment() {
  const char* value = std::getenv("MURMUR_BLAS_THREADS");
  if (value == nullptr) return 1;
  int n = 0;
  const char* end = value + std::strlen(value);
  const auto [ptr, ec] = std::from_chars(value, end, n);
  if (ptr == value || ec != std::errc() || ptr != end || n < 1)
    throw std::invalid_argument(std::string("MURMUR_BLAS_THREADS='") + value + "' is not a positive integer");
  return n;
}

}  // namespace murmur::peer::model
