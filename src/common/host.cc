#include "common/host.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace murmur {

std::string local_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

namespace {

// "<prefix><inode>" of a namespace link, or "" where it cannot be read.
std::string namespace_inode(const char* link, const char* prefix) {
  struct stat st {};
  if (::stat(link, &st) != 0) return {};
  return prefix + std::to_string(st.st_ino);
}

}  // namespace

std::string machine_identity() {
  if (const char* given = std::getenv("MURMUR_HOST_ID"); given != nullptr && *given != '\0') return given;
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  const std::string net = namespace_inode("/proc/self/ns/net", "/net:");
  const std::string pid = namespace_inode("/proc/self/ns/pid", "/pid:");
  struct stat shm {};
  if (boot.empty() || net.empty() || pid.empty() || ::stat("/dev/shm", &shm) != 0) return local_host_name();
  return "boot:" + boot + net + pid + "/shm:" + std::to_string(shm.st_dev);
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
