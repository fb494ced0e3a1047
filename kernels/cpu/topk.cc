// Exact top-k by magnitude in one pass over the input (most of the time):
// a threshold from a seeded sample, a selection pass that keeps candidates at
// or above it, and nth_element on the candidates to cut to exactly k. Keys are
// the bits of |x| as uint32 (monotone for non-negative floats; NaN above inf).
#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/compress.h"
#include "kernels/cpu/pack.h"
#include "kernels/rng.h"

namespace murmur::kernels::cpu {
namespace {

constexpr std::size_t kSample = 4096;

inline std::uint32_t key_of(float v) { return std::bit_cast<std::uint32_t>(v) & 0x7fffffffu; }

std::size_t candidate_cap(std::size_t n, std::size_t k) { return std::min(n, 2 * k + 4096) + 16; }

// Writes the k entries with key > t, then the first (k - greater) with key == t,
// in index order, from the full input.
void emit_exact(const float* in, std::size_t n, std::size_t k, std::uint32_t t, std::size_t greater, std::uint32_t* idx,
                float* vals) {
  std::size_t equal_left = k - greater, out = 0;
  for (std::size_t i = 0; i < n && out < k; ++i) {
    const std::uint32_t key = key_of(in[i]);
    if (key > t || (key == t && equal_left > 0)) {
      if (key == t) --equal_left;
      idx[out] = static_cast<std::uint32_t>(i);
      vals[out] = in[i];
      ++out;
    }
  }
}

// Exact k-th largest key by a radix select (11, 11, 10 bits): three counting
// passes. Returns the key and how many keys are strictly greater.
std::uint32_t radix_kth(const float* in, std::size_t n, std::size_t k, std::size_t* greater) {
  std::uint32_t prefix = 0, prefix_mask = 0;
  std::size_t rank = k;  // rank of the wanted key among those matching the prefix, 1-based from the top
  std::size_t above = 0;
  const int shifts[3] = {21, 10, 0};
  const int widths[3] = {11, 11, 10};
  for (int pass = 0; pass < 3; ++pass) {
    std::size_t hist[2048] = {};
    const int sh = shifts[pass];
    const std::uint32_t dmask = (1u << widths[pass]) - 1;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t key = key_of(in[i]);
      if ((key & prefix_mask) == prefix) ++hist[(key >> sh) & dmask];
    }
    std::uint32_t d = dmask;
    for (;; --d) {
      if (hist[d] >= rank) break;
      rank -= hist[d];
      above += hist[d];
    }
    prefix |= d << sh;
    prefix_mask |= dmask << sh;
  }
  *greater = above;
  return prefix;
}

// The selection pass (see topk_select).
MURMUR_VECTOR_CLONES std::size_t select_candidates(const float* in, std::size_t n, std::uint32_t t, std::size_t cap,
                                                   std::uint32_t* cand_idx, std::uint32_t* cand_key,
                                                   bool* overflow_out) {
  std::size_t cnt = 0;
  std::size_t i = 0;
  bool overflow = false;
  for (; i + 16 <= n; i += 16) {
    std::uint32_t any = 0;
    for (int j = 0; j < 16; ++j) any |= key_of(in[i + j]) >= t;
    if (!any) continue;
    if (cnt + 16 > cap) {
      overflow = true;
      break;
    }
    for (int j = 0; j < 16; ++j) {
      const std::uint32_t key = key_of(in[i + j]);
      cand_idx[cnt] = static_cast<std::uint32_t>(i + j);
      cand_key[cnt] = key;
      cnt += key >= t;
    }
  }
  for (; !overflow && i < n; ++i) {
    const std::uint32_t key = key_of(in[i]);
    if (key >= t) {
      if (cnt == cap) {
        overflow = true;
        break;
      }
      cand_idx[cnt] = static_cast<std::uint32_t>(i);
      cand_key[cnt] = key;
      ++cnt;
    }
  }

  *overflow_out = overflow;
  return cnt;
}

}  // namespace

Status topk_select(void* scratch, std::size_t& scratch_bytes, const float* in, std::size_t n, std::size_t k,
                   std::uint64_t seed, std::uint32_t* idx, float* vals) {
  const std::size_t cap = candidate_cap(n, k);
  const std::size_t sample = std::min(n, kSample);
  // candidate indices, candidate keys, a copy of the keys for nth_element, the sample
  const std::size_t need = cap * 12 + sample * 4;
  if (scratch == nullptr) {
    scratch_bytes = need;
    return Status::kOk;
  }
  if (scratch_bytes < need) return Status::kScratchTooSmall;
  if (k > n || n >= (std::size_t(1) << 32)) return Status::kInvalidArgument;
  if (k == 0) return Status::kOk;
  auto* cand_idx = static_cast<std::uint32_t*>(scratch);
  auto* cand_key = cand_idx + cap;
  auto* work = cand_key + cap;
  auto* samp = work + cap;

  // Threshold: the sample quantile that should leave about k + k/4 + 32
  // candidates (margin against sampling error), capped by the buffer.
  const std::uint32_t rkey = seed_key(seed);
  for (std::size_t j = 0; j < sample; ++j) {
    const std::size_t pos = sample == n ? j : static_cast<std::size_t>((std::uint64_t(draw_u32(rkey, j)) * n) >> 32);
    samp[j] = key_of(in[pos]);
  }
  const double want = std::min<double>(double(n), double(k) + double(k) / 4 + 32);
  std::size_t above = static_cast<std::size_t>(double(sample) * want / double(n));
  above = std::min(std::max<std::size_t>(above, 1), sample);
  std::nth_element(samp, samp + (sample - above), samp + sample);
  const std::uint32_t t = samp[sample - above];

  // Selection pass; blocks of 16 with no key >= t (the common case) cost a
  // vectorized compare and one branch; inside a hit block, a branch-free
  // compaction (write always, advance on a hit) avoids mispredictions. The
  // candidate arrays have 16 spare slots for those speculative writes.
  bool overflow = false;
  const std::size_t cnt = select_candidates(in, n, t, cap, cand_idx, cand_key, &overflow);

  if (cnt < k || overflow) {  // the estimate missed: exact fallback
    std::size_t greater = 0;
    const std::uint32_t kth = radix_kth(in, n, k, &greater);
    emit_exact(in, n, k, kth, greater, idx, vals);
    return Status::kOk;
  }
  std::memcpy(work, cand_key, cnt * 4);
  std::nth_element(work, work + (cnt - k), work + cnt);
  const std::uint32_t kth = work[cnt - k];
  std::size_t greater = 0;
  for (std::size_t c = 0; c < cnt; ++c) greater += cand_key[c] > kth;
  std::size_t equal_left = k - greater, out = 0;
  for (std::size_t c = 0; c < cnt && out < k; ++c) {
    const std::uint32_t key = cand_key[c];
    if (key > kth || (key == kth && equal_left > 0)) {
      if (key == kth) --equal_left;
      idx[out] = cand_idx[c];
      vals[out] = in[cand_idx[c]];
      ++out;
    }
  }
  return Status::kOk;
}

}  // namespace murmur::kernels::cpu
