// Harness: the simulator's model profile files (sim/model_profile.h).
// Input: the file. It loads or throws ProfileError.
#include "fuzz_target.h"
#include "scratch_file.h"
#include "sim/model_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = murmur::fuzz::write_scratch_file("sim-profile", {reinterpret_cast<const char*>(data), size});
  try {
    (void)murmur::sim::load_profile_file(path);
  } catch (const murmur::sim::ProfileError&) {
  }
  ::unlink(path.c_str());
  return 0;
}
