#include "sim/cost/network_preset.h"

#include "sim/cost/paper_methods.h"

namespace murmur::sim::cost {
namespace {

// What one stream between two nodes achieved on the paper's clusters: the
// calibration's NCCL ring step and per-NIC bandwidth (a ring moves one
// stream through each NIC). Inside a node: the fitted PCIe ring constants.
NetworkPreset from_calibration(const std::string& name, const std::string& description) {
  const PaperConstants& c = calibrated_constants();
  const StackOnNetwork& stack = c.networks.at(name);
  return {name,
          description,
          {stack.ring_step_s, stack.ring_bandwidth_Bps},
          {c.intra_ring_step_s, c.intra_ring_bandwidth_Bps}};
}

}  // namespace

const std::vector<NetworkPreset>& network_presets() {
  static const std::vector<NetworkPreset> presets = {
      from_calibration("10gbe-tcp", "10GbE with TCP/IP"),
      from_calibration("100gb-ib-rdma", "100Gb InfiniBand with RDMA"),
      from_calibration("100gbe-tcp", "100GbE with TCP/IP"),
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

}  // namespace murmur::sim::cost
