// Bias and ReLU bodies: one pass over memory each, written for the
// vectorizer (AVX2 and baseline clones, see pack.h).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/pack.h"
#include "kernels/layers.h"

namespace murmur::kernels::cpu {
namespace {

MURMUR_VECTOR_CLONES void add_rows(float* y, const float* bias, std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = y + r * cols;
    for (std::size_t c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

MURMUR_VECTOR_CLONES void sum_rows(const float* dy, std::size_t rows, std::size_t cols, float* db) {
  std::memset(db, 0, cols * sizeof(float));
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = dy + r * cols;
    for (std::size_t c = 0; c < cols; ++c) db[c] += row[c];
  }
}

MURMUR_VECTOR_CLONES void relu(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = std::max(x[i], 0.0f);
}

MURMUR_VECTOR_CLONES void relu_mask(const float* y, const float* dy, float* dx, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace

Status bias_add(void* scratch, std::size_t& scratch_bytes, float* y, const float* bias, std::size_t rows,
                std::size_t cols) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  add_rows(y, bias, rows, cols);
  return Status::kOk;
}

Status bias_grad(void* scratch, std::size_t& scratch_bytes, const float* dy, std::size_t rows, std::size_t cols,
                 float* db) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  sum_rows(dy, rows, cols, db);
  return Status::kOk;
}

Status relu_forward(void* scratch, std::size_t& scratch_bytes, const float* x, float* y, std::size_t n) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  relu(x, y, n);
  return Status::kOk;
}

Status relu_backward(void* scratch, std::size_t& scratch_bytes, const float* y, const float* dy, float* dx,
                     std::size_t n) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  relu_mask(y, dy, dx, n);
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
