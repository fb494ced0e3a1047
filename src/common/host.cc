#include "common/host.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace murmur {

std::string local_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

std::string shm_region_prefix(int pid) { return "murmur-" + std::to_string(pid) + "-"; }

void remove_shm_regions_of(int pid) {
  const std::string prefix = shm_region_prefix(pid);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace murmur
