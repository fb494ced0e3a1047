// Named networks: the seed paper's three interconnects with the constants
// murmur-sim's calibration found for them (docs/sim.md says how). A preset
// gives the links of a ClusterSpec and the per-software efficiencies the
// paper methods see on it (NCCL's ring and BytePS's parameter servers do not
// reach the same share of a NIC's line rate over TCP).
// Thread safety: immutable tables.
#pragma once

#include <string>
#include <vector>

#include "sim/cluster_spec.h"

namespace murmur::sim::cost {

struct NetworkPreset {
  std::string name;         // e.g. "10gbe-tcp"
  std::string description;  // e.g. "10GbE with TCP/IP"
  LinkSpec inter_node;      // what one stream between nodes sees (gossip messages)
  LinkSpec intra_node;      // between GPUs of one node (PCIe, the same in every preset)
};

const std::vector<NetworkPreset>& network_presets();
// Throws ClusterError listing the known names for an unknown one.
const NetworkPreset& network_preset(const std::string& name);
// Sets spec.network, spec.inter_node and spec.intra_node from the preset.
void apply_network_preset(ClusterSpec& spec, const std::string& name);

}  // namespace murmur::sim::cost
