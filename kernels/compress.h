// Compression kernels: the bodies the gossip compressors (src/gossip/compress)
// are made of. Two bodies with the same signatures:
//   murmur::kernels::cpu   (kernels/cpu, the reference; vectorizable C++)
//   murmur::kernels::cuda  (kernels/cuda, only when built with CUDA; the
//                           declarations exist only if MURMUR_HAVE_CUDA)
//
// Calling shape (CUB's): (scratch, scratch_bytes, inputs..., [stream]).
// With scratch == nullptr a call only stores the scratch size it needs in
// scratch_bytes and returns kOk, doing no work; then the caller allocates that
// many bytes (host memory for cpu::, device memory for cuda::) and calls again.
// A kernel that needs no scratch reports 0 and still follows the shape: pass
// any non-null pointer (CUB's own wart, kept for one rule everywhere).
//
// Blocking: cpu:: kernels run to completion on the calling thread. cuda::
// kernels only enqueue on `stream` (nullptr = legacy default stream) and
// return; every pointer they take is device memory, except where the comment
// says otherwise. No kernel allocates. Kernels are reentrant: no shared state.
//
// Limits: element counts below 2^32 (indices are uint32 on the wire).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/status.h"

struct CUstream_st;  // cudaStream_t without including the CUDA headers

namespace murmur::kernels {

using Stream = CUstream_st*;

// True when built with CUDA and the runtime sees at least one device. False
// on hosts without a driver (cudaErrorInsufficientDriver, 35) or without a
// GPU (cudaErrorNoDevice, 100), and always when built without CUDA.
bool cuda_device_available();

// Bits per element of QSGD with s levels: a sign bit and ceil(log2(s+1))
// level bits. s in [1, kQsgdMaxLevels].
inline constexpr unsigned kQsgdMaxLevels = 127;
unsigned qsgd_bits(unsigned s);
// Bytes of n packed codes of `bits` bits each (8 codes fill `bits` bytes,
// little-endian, first code in the lowest bits).
std::size_t packed_bytes(std::size_t n, unsigned bits);

#define MURMUR_KERNEL_DECLS(STREAM_PARAM)                                                                              \
  /* fp32 -> IEEE half, round to nearest even; overflow -> inf, NaN kept. */                                           \
  Status f32_to_f16(void* scratch, std::size_t& scratch_bytes, const float* in, std::uint16_t* out,                    \
                    std::size_t n STREAM_PARAM);                                                                       \
  Status f16_to_f32(void* scratch, std::size_t& scratch_bytes, const std::uint16_t* in, float* out,                    \
                    std::size_t n STREAM_PARAM);                                                                       \
  /* fp32 -> bfloat16, round to nearest even; NaN stays a quiet NaN. */                                                \
  Status f32_to_bf16(void* scratch, std::size_t& scratch_bytes, const float* in, std::uint16_t* out,                   \
                     std::size_t n STREAM_PARAM);                                                                      \
  Status bf16_to_f32(void* scratch, std::size_t& scratch_bytes, const std::uint16_t* in, float* out,                   \
                     std::size_t n STREAM_PARAM);                                                                      \
  /* QSGD: norm = ||x||_2; level_i = min(floor(s|x_i|/norm + u_i), s) in one  */                                       \
  /* rounding, u_i from draw_unit16(seed, i) (rng.h; the rule: cpu/qsgd.h),  */                                        \
  /* so E[decode] = x (to 2^-17 of a step); a zero or non-finite norm gives   */                                       \
  /* level 0. Writes *norm and packed_bytes(n, qsgd_bits(s)) bytes of codes  */                                        \
  /* (sign in the top bit of each code).                                     */                                        \
  Status qsgd_encode(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, unsigned s,            \
                     std::uint64_t seed, float* norm, std::uint8_t* packed STREAM_PARAM);                              \
  /* kMalformed when a level exceeds s (out is then unspecified). The cuda  */                                         \
  /* twin needs 4 bytes of scratch and synchronizes `stream` to report it.   */                                        \
  Status qsgd_decode(void* scratch, std::size_t& scratch_bytes, const std::uint8_t* packed, std::size_t n, unsigned s, \
                     float norm, float* out STREAM_PARAM);                                                             \
  /* Scaled sign: *scale = ||x||_1 / n; bit i = signbit(x_i) (1 = negative). */                                        \
  Status sign_encode(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, float* scale,          \
                     std::uint8_t* bits STREAM_PARAM);                                                                 \
  Status sign_decode(void* scratch, std::size_t& scratch_bytes, const std::uint8_t* bits, std::size_t n, float scale,  \
                     float* out STREAM_PARAM);                                                                         \
  /* vals[j] = in[idx[j]]. */                                                                                          \
  Status gather(void* scratch, std::size_t& scratch_bytes, const float* in, const std::uint32_t* idx, std::size_t k,   \
                float* vals STREAM_PARAM);                                                                             \
  /* out = 0 except out[idx[j]] = vals[j]; kMalformed if an idx >= n (the  */                                          \
  /* cuda twin needs 4 bytes of scratch and synchronizes `stream` for it).   */                                        \
  Status scatter(void* scratch, std::size_t& scratch_bytes, const std::uint32_t* idx, const float* vals,               \
                 std::size_t k, float* out, std::size_t n STREAM_PARAM);                                               \
  /* PowerSGD step on the row-major rows x cols matrix m: p = m q;            */                                       \
  /* orthonormalise p's columns (Gram-Schmidt; a zero column stays zero);    */                                        \
  /* q = m^T p. q (cols x rank, row-major) holds the warm start on entry and  */                                       \
  /* the new factor on exit; p is rows x rank, row-major.                     */                                       \
  Status powersgd_factor(void* scratch, std::size_t& scratch_bytes, const float* m, std::size_t rows,                  \
                         std::size_t cols, std::size_t rank, float* p, float* q STREAM_PARAM);                         \
  /* out = p q^T (rows x cols, row-major). */                                                                          \
  Status powersgd_expand(void* scratch, std::size_t& scratch_bytes, const float* p, const float* q, std::size_t rows,  \
                         std::size_t cols, std::size_t rank, float* out STREAM_PARAM);

namespace cpu {
MURMUR_KERNEL_DECLS()

namespace detail {
// The portable fp16 bodies that f32_to_f16 / f16_to_f32 use when the CPU
// lacks F16C; exposed so that tests cover them on any machine.
void f32_to_f16_sw(const float* in, std::uint16_t* out, std::size_t n);
void f16_to_f32_sw(const std::uint16_t* in, float* out, std::size_t n);
}  // namespace detail

// Top-k selection and the random-k draw (CUDA twins below, same results bit
// for bit); the index encodings are host-only.

// Exactly k entries of largest |x| (among ties at the k-th magnitude, the
// lowest indices), written in increasing index order. One pass with a
// threshold estimated from a seeded sample, then a fix-up to exactly k on the
// candidates; falls back to an exact radix select (four passes) when the
// estimate misses. NaN counts as larger than any number.
Status topk_select(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, std::size_t k,
                   std::uint64_t seed, std::uint32_t* idx, float* vals);

// A uniformly random k-subset of [0, n) from the seed (Floyd's algorithm),
// in increasing order. Scratch: a bitmap of n bits.
Status randk_indices(void* scratch, std::size_t& scratch_bytes, std::size_t n, std::size_t k, std::uint64_t seed,
                     std::uint32_t* idx);

// Index sets on the wire (host-side byte work, CPU only). Indices must be
// strictly increasing. Delta-varint: the first index, then gaps minus one,
// each LEB128. Bitmap: n bits, LSB first.
std::size_t delta_varint_bytes(const std::uint32_t* idx, std::size_t k);
std::size_t delta_varint_encode(const std::uint32_t* idx, std::size_t k, std::uint8_t* out);
// Reads exactly k indices from at most len bytes; kMalformed on truncation,
// an over-long varint, an index >= n; *consumed = bytes read.
Status delta_varint_decode(const std::uint8_t* in, std::size_t len, std::size_t k, std::size_t n, std::uint32_t* idx,
                           std::size_t* consumed);
std::size_t bitmap_bytes(std::size_t n);
void bitmap_encode(const std::uint32_t* idx, std::size_t k, std::size_t n, std::uint8_t* out);
// kMalformed unless exactly k bits are set and none at or beyond n.
Status bitmap_decode(const std::uint8_t* in, std::size_t n, std::size_t k, std::uint32_t* idx);
}  // namespace cpu

#if defined(MURMUR_HAVE_CUDA)
namespace cuda {
#define MURMUR_STREAM_PARAM_ , Stream stream
MURMUR_KERNEL_DECLS(MURMUR_STREAM_PARAM_)
#undef MURMUR_STREAM_PARAM_

// Twins of cpu::topk_select and cpu::randk_indices: the same index sets (and
// values) bit for bit, in increasing index order; they only enqueue. topk:
// a stable radix sort of (|x| bits, index) pairs, scratch about 16n bytes
// plus CUB's; the seed is accepted for symmetry and does not change the
// result (on the CPU it only steers a sampling shortcut). randk: Floyd's draw
// in one device thread (TODO(perf), fine for k up to ~1e5), then a parallel
// bitmap-to-index pass; scratch about n/4 bytes plus CUB's.
Status topk_select(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, std::size_t k,
                   std::uint64_t seed, std::uint32_t* idx, float* vals, Stream stream);
Status randk_indices(void* scratch, std::size_t& scratch_bytes, std::size_t n, std::size_t k, std::uint64_t seed,
                     std::uint32_t* idx, Stream stream);
}  // namespace cuda
#endif

#undef MURMUR_KERNEL_DECLS

}  // namespace murmur::kernels
