// murmur-peer's data partition (src/peer/data/partition.h), so that a
// PyTorch script shards a data set exactly as murmur-peer does for the same
// (spec, labels, peers, seed).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bindings.h"
#include "peer/data/partition.h"

namespace nb = nanobind;

namespace murmur::python {

void bind_partition(nb::module_& m) {
  m.def(
      "partition",
      [](const std::string& spec, nb::bytes labels, int num_classes, int peers, std::uint64_t seed) {
        const std::span<const std::uint8_t> view(static_cast<const std::uint8_t*>(labels.data()), labels.size());
        for (std::size_t i = 0; i < view.size(); ++i) {
          // partition() treats a label >= num_classes as a bug; from Python
          // it is bad input, so it is reported as such.
          if (view[i] >= num_classes) {
            throw std::invalid_argument("partition: label " + std::to_string(view[i]) + " at index " +
                                        std::to_string(i) + " is not below num_classes=" + std::to_string(num_classes));
          }
        }
        return peer::data::partition(peer::data::parse_partition(spec), view, num_classes, peers, seed);
      },
      nb::arg("spec"), nb::arg("labels"), nb::arg("num_classes"), nb::arg("peers"), nb::arg("seed"),
      "The example indices of each peer's shard, each ascending, as murmur-peer's --partition computes them.\n\n"
      "spec: \"iid\" or \"dirichlet:<alpha>\"; labels: one byte per example, each below num_classes.\n"
      "Raises ValueError for a bad spec, fewer examples than peers, or a label out of range.");
}

}  // namespace murmur::python
