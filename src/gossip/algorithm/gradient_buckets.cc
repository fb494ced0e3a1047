#include "gossip/algorithm/gradient_buckets.h"

#include <algorithm>

#include "common/check.h"

namespace murmur::gossip::detail {

std::vector<LayerRange> merge_gradient_buckets(std::span<const double> ready_s,
                                               std::span<const std::size_t> layer_bytes, AllreduceCost cost) {
  MURMUR_CHECK_EQ(ready_s.size(), layer_bytes.size());
  std::vector<LayerRange> buckets;
  const std::size_t layers = ready_s.size();
  if (layers == 0) return buckets;
  double link_free = -1e300;
  std::size_t last = layers;  // the bucket in hand is [l, last)
  double bucket_ready = ready_s[layers - 1];
  double bucket_bytes = 0;
  for (std::size_t l = layers; l-- > 0;) {
    bucket_ready = std::max(bucket_ready, ready_s[l]);
    bucket_bytes += static_cast<double>(layer_bytes[l]);
    const double start = std::max(link_free, bucket_ready);
    if (l > 0 && start > ready_s[l - 1] - cost.alpha_s) continue;  // merge layer l - 1 in
    link_free = start + cost.alpha_s + cost.beta_s_per_byte * bucket_bytes;
    buckets.push_back({l, last});
    last = l;
    bucket_bytes = 0;
    if (l > 0) bucket_ready = ready_s[l - 1];
  }
  return buckets;
}

}  // namespace murmur::gossip::detail
