#include "sim/cost/mg_wfbp.h"

#include <algorithm>

namespace murmur::sim::cost {

std::vector<std::vector<int>> merge_buckets(const std::vector<ReadyTensor>& tensors, double startup_s,
                                            double seconds_per_byte) {
  std::vector<std::vector<int>> buckets;
  double stream_free = 0;  // when the previous bucket's all-reduce ends
  std::vector<int> current;
  double current_bytes = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    current.push_back(static_cast<int>(i));
    current_bytes += tensors[i].bytes;
    const double start = std::max(stream_free, tensors[i].ready_s);
    // Wait for the next gradient when this bucket could not start before it
    // is ready plus the startup merging saves.
    if (i + 1 < tensors.size() && start + startup_s > tensors[i + 1].ready_s) continue;
    stream_free = start + startup_s + current_bytes * seconds_per_byte;
    buckets.push_back(std::move(current));
    current.clear();
    current_bytes = 0;
  }
  return buckets;
}

}  // namespace murmur::sim::cost
