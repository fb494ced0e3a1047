// PowerSGD (Vogels et al. 2019): one power iteration with a warm-started Q.
#include <cmath>
#include <cstring>

#include "kernels/compress.h"

namespace murmur::kernels::cpu {

Status powersgd_factor(void* scratch, std::size_t& scratch_bytes, const float* m, std::size_t rows, std::size_t cols,
                       std::size_t rank, float* p, float* q) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  if (rank == 0 || rank > 64) return Status::kInvalidArgument;
  // p = m q (rows x rank)
  for (std::size_t i = 0; i < rows; ++i) {
    float acc[64] = {};
    const float* mi = m + i * cols;
    for (std::size_t j = 0; j < cols; ++j) {
      const float a = mi[j];
      const float* qj = q + j * rank;
      for (std::size_t c = 0; c < rank; ++c) acc[c] += a * qj[c];
    }
    std::memcpy(p + i * rank, acc, rank * sizeof(float));
  }
  // Modified Gram-Schmidt on p's columns, dot products in double.
  for (std::size_t c = 0; c < rank; ++c) {
    for (std::size_t d = 0; d < c; ++d) {
      double dot = 0;
      for (std::size_t i = 0; i < rows; ++i) dot += double(p[i * rank + c]) * p[i * rank + d];
      const float f = static_cast<float>(dot);
      for (std::size_t i = 0; i < rows; ++i) p[i * rank + c] -= f * p[i * rank + d];
    }
    double sq = 0;
    for (std::size_t i = 0; i < rows; ++i) sq += double(p[i * rank + c]) * p[i * rank + c];
    const float inv = sq > 1e-30 ? static_cast<float>(1.0 / std::sqrt(sq)) : 0.0f;
    for (std::size_t i = 0; i < rows; ++i) p[i * rank + c] *= inv;
  }
  // q = m^T p (cols x rank)
  std::memset(q, 0, cols * rank * sizeof(float));
  for (std::size_t i = 0; i < rows; ++i) {
    const float* mi = m + i * cols;
    const float* pi = p + i * rank;
    for (std::size_t j = 0; j < cols; ++j) {
      const float a = mi[j];
      float* qj = q + j * rank;
      for (std::size_t c = 0; c < rank; ++c) qj[c] += a * pi[c];
    }
  }
  return Status::kOk;
}

Status powersgd_expand(void* scratch, std::size_t& scratch_bytes, const float* p, const float* q, std::size_t rows,
                       std::size_t cols, std::size_t rank, float* out) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  for (std::size_t i = 0; i < rows; ++i) {
    const float* pi = p + i * rank;
    float* oi = out + i * cols;
    for (std::size_t j = 0; j < cols; ++j) {
      const float* qj = q + j * rank;
      float acc = 0;
      for (std::size_t c = 0; c < rank; ++c) acc += pi[c] * qj[c];
      oi[j] = acc;
    }
  }
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
