// Harness: the launcher's hostfile parser and its --hosts list
// (peer/launcher/hostfile.h). Input: the text. Each parses or throws
// HostfileError.
#include <sstream>

#include "fuzz_target.h"
#include "peer/launcher/hostfile.h"

namespace launcher = murmur::peer::launcher;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::istringstream in(text);
    (void)launcher::parse_hostfile(in, "fuzz.hosts");
  } catch (const launcher::HostfileError&) {
  }
  try {
    (void)launcher::parse_host_list(text);
  } catch (const launcher::HostfileError&) {
  }
  return 0;
}
