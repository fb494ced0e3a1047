// Harness: the topology file parser (gossip/topology/topo_file.h). Input:
// the text. It parses into a graph or throws TopologyError.
#include <sstream>

#include "fuzz_target.h"
#include "gossip/topology/errors.h"
#include "gossip/topology/topo_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    (void)murmur::gossip::parse_topology(in, "fuzz.topo");
  } catch (const murmur::gossip::TopologyError&) {
  }
  return 0;
}
