// im2col / col2im for 3x3 windows with padding 1, and 2x2 max pooling, on
// NHWC images. A window's channels are contiguous in both layouts, so the
// inner loops are channel copies the vectorizer handles (and with one
// channel, the first layer, plain scalar moves).
#include <cstring>

#include "kernels/cpu/pack.h"
#include "kernels/layers.h"

namespace murmur::kernels::cpu {
namespace {

// One output pixel's row: three runs of 3 x channels floats, one per window
// row, each contiguous in the image unless the window hangs over the left or
// right edge (then tap by tap).
MURMUR_VECTOR_CLONES void im2col(const float* image, std::size_t images, std::size_t rows, std::size_t cols,
                                 std::size_t channels, float* columns) {
  const std::size_t run = 3 * channels;
  for (std::size_t n = 0; n < images; ++n) {
    const float* img = image + n * rows * cols * channels;
    for (std::size_t y = 0; y < rows; ++y)
      for (std::size_t x = 0; x < cols; ++x) {
        float* out = columns + ((n * rows + y) * cols + x) * 3 * run;
        for (int ky = -1; ky <= 1; ++ky, out += run) {
          const std::size_t sy = y + ky;  // wraps past 0 to a huge value
          if (sy >= rows) {
            for (std::size_t i = 0; i < run; ++i) out[i] = 0.0f;
            continue;
          }
          const float* src_row = img + sy * cols * channels;
          if (x >= 1 && x + 1 < cols) {
            const float* src = src_row + (x - 1) * channels;
            if (channels == 1) {  // the first layer: three scalar moves, no loop
              out[0] = src[0];
              out[1] = src[1];
              out[2] = src[2];
            } else {
              for (std::size_t i = 0; i < run; ++i) out[i] = src[i];
            }
            continue;
          }
          for (int kx = -1; kx <= 1; ++kx) {
            const std::size_t sx = x + kx;
            float* tap = out + std::size_t(kx + 1) * channels;
            if (sx >= cols) {
              for (std::size_t c = 0; c < channels; ++c) tap[c] = 0.0f;
            } else {
              for (std::size_t c = 0; c < channels; ++c) tap[c] = src_row[sx * channels + c];
            }
          }
        }
      }
  }
}

MURMUR_VECTOR_CLONES void col2im(const float* columns, std::size_t images, std::size_t rows, std::size_t cols,
                                 std::size_t channels, float* image) {
  const std::size_t row_len = 9 * channels;
  std::memset(image, 0, images * rows * cols * channels * sizeof(float));
  for (std::size_t n = 0; n < images; ++n) {
    float* img = image + n * rows * cols * channels;
    for (std::size_t y = 0; y < rows; ++y)
      for (std::size_t x = 0; x < cols; ++x) {
        const float* in = columns + ((n * rows + y) * cols + x) * row_len;
        for (int ky = -1; ky <= 1; ++ky)
          for (int kx = -1; kx <= 1; ++kx, in += channels) {
            const std::size_t sy = y + ky, sx = x + kx;
            if (sy >= rows || sx >= cols) continue;
            float* dst = img + (sy * cols + sx) * channels;
            for (std::size_t c = 0; c < channels; ++c) dst[c] += in[c];
          }
      }
  }
}

// The window's maximum by value comparisons and selects (no load through
// the running argmax), so the channel loop vectorizes with blends. Strict >
// keeps the first of equal values in window order.
MURMUR_VECTOR_CLONES void pool(const float* x, std::size_t images, std::size_t rows, std::size_t cols,
                               std::size_t channels, float* y, std::uint32_t* argmax) {
  const std::size_t out_rows = rows / 2, out_cols = cols / 2;
  for (std::size_t n = 0; n < images; ++n)
    for (std::size_t oy = 0; oy < out_rows; ++oy)
      for (std::size_t ox = 0; ox < out_cols; ++ox) {
        const std::size_t p00 = ((n * rows + 2 * oy) * cols + 2 * ox) * channels;
        const std::size_t p01 = p00 + channels, p10 = p00 + cols * channels, p11 = p10 + channels;
        const std::size_t o = ((n * out_rows + oy) * out_cols + ox) * channels;
        for (std::size_t c = 0; c < channels; ++c) {
          float m = x[p00 + c];
          std::uint32_t i = static_cast<std::uint32_t>(p00 + c);
          const float v01 = x[p01 + c], v10 = x[p10 + c], v11 = x[p11 + c];
          i = v01 > m ? static_cast<std::uint32_t>(p01 + c) : i;
          m = v01 > m ? v01 : m;
          i = v10 > m ? static_cast<std::uint32_t>(p10 + c) : i;
          m = v10 > m ? v10 : m;
          i = v11 > m ? static_cast<std::uint32_t>(p11 + c) : i;
          m = v11 > m ? v11 : m;
          y[o + c] = m;
          argmax[o + c] = i;
        }
      }
}

}  // namespace

Status im2col3x3(void* scratch, std::size_t& scratch_bytes, const float* image, std::size_t images, std::size_t rows,
                 std::size_t cols, std::size_t channels, float* columns) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  im2col(image, images, rows, cols, channels, columns);
  return Status::kOk;
}

Status col2im3x3(void* scratch, std::size_t& scratch_bytes, const float* columns, std::size_t images, std::size_t rows,
                 std::size_t cols, std::size_t channels, float* image) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  col2im(columns, images, rows, cols, channels, image);
  return Status::kOk;
}

Status maxpool2_forward(void* scratch, std::size_t& scratch_bytes, const float* x, std::size_t images, std::size_t rows,
                        std::size_t cols, std::size_t channels, float* y, std::uint32_t* argmax) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  pool(x, images, rows, cols, channels, y, argmax);
  return Status::kOk;
}

Status maxpool2_backward(void* scratch, std::size_t& scratch_bytes, const float* dy, const std::uint32_t* argmax,
                         std::size_t y_count, float* dx, std::size_t x_count) {
  if (scratch == nullptr) {
    scratch_bytes = 0;
    return Status::kOk;
  }
  std::memset(dx, 0, x_count * sizeof(float));
  for (std::size_t i = 0; i < y_count; ++i) {
    if (argmax[i] >= x_count) return Status::kInvalidArgument;
    dx[argmax[i]] = dy[i];  // windows do not overlap: no sums needed
  }
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
