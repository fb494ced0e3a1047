// Harness: the simulator's cluster files (sim/cluster_spec.h). Input: the
// file. It loads or throws ClusterError.
#include "fuzz_target.h"
#include "scratch_file.h"
#include "sim/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = murmur::fuzz::write_scratch_file("sim-cluster", {reinterpret_cast<const char*>(data), size});
  try {
    (void)murmur::sim::load_cluster_file(path);
  } catch (const murmur::sim::ClusterError&) {
  }
  ::unlink(path.c_str());
  return 0;
}
