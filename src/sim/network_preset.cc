#include "sim/network_preset.h"

namespace murmur::sim {

// Placeholder constants (line rates, typical latencies) until the
// calibration in paper_methods replaces them with fitted values.
const std::vector<NetworkPreset>& network_presets() {
  static const std::vector<NetworkPreset> presets = {
      {"10gbe-tcp", "10GbE with TCP/IP", {50e-6, 1.25e9}, {10e-6, 10e9}},
      {"100gb-ib-rdma", "100Gb InfiniBand with RDMA", {5e-6, 12.5e9}, {10e-6, 10e9}},
      {"100gbe-tcp", "100GbE with TCP/IP", {30e-6, 12.5e9}, {10e-6, 10e9}},
  };
  return presets;
}

const NetworkPreset& network_preset(const std::string& name) {
  std::string known;
  for (const auto& preset : network_presets()) {
    if (preset.name == name) return preset;
    known += (known.empty() ? "" : ", ") + preset.name;
  }
  throw ClusterError("unknown network '" + name + "' (known: " + known + ")");
}

void apply_network_preset(ClusterSpec& spec, const std::string& name) {
  const NetworkPreset& preset = network_preset(name);
  spec.network = preset.name;
  spec.inter_node = preset.inter_node;
  spec.intra_node = preset.intra_node;
}

}  // namespace murmur::sim
