#include "fabric/libfabric/cross_memory_access.h"

#include <sys/prctl.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "common/log.h"

namespace murmur::fabric::libfabric {
namespace {

constexpr const char* kPtraceScopePath = "/proc/sys/kernel/yama/ptrace_scope";

std::optional<int> read_ptrace_scope() {
  std::ifstream file(kPtraceScopePath);
  int scope = 0;
  if (!(file >> scope)) return std::nullopt;
  return scope;
}

// libfabric's reading of a boolean variable (ofi_str_to_bool, 1.17).
bool cma_disabled_by_environment() {
  const char* value = std::getenv("FI_SHM_DISABLE_CMA");
  if (value == nullptr) return false;
  const std::string v(value);
  return v == "1" || v == "true" || v == "yes" || v == "on" || v == "TRUE" || v == "YES" || v == "ON";
}

CrossMemoryAccess arrange() {
  if (cma_disabled_by_environment()) {
    fabric_log().warn(
        "libfabric shm: FI_SHM_DISABLE_CMA is set: shm copies messages over 4 KiB through its segment buffers, "
        "where a few messages sent before their receives were posted can hold up later ones on other tags "
        "(docs/fabric-performance.md, \"shm without cross-memory attach\")");
    return CrossMemoryAccess::kRefused;
  }
  const std::optional<int> scope = read_ptrace_scope();
  CrossMemoryAccess access = cross_memory_access_for(scope);
  if (access == CrossMemoryAccess::kLiftedByPrctl) {
    if (::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0) {
      fabric_log().info(
          "libfabric shm: {} is 1, so this process lets its peers read its memory (PR_SET_PTRACER_ANY) "
          "for shm's single-copy transfers",
          kPtraceScopePath);
    } else {
      fabric_log().warn("libfabric shm: prctl(PR_SET_PTRACER_ANY) failed: {}", std::strerror(errno));
      access = CrossMemoryAccess::kRefused;
    }
  }
  if (access == CrossMemoryAccess::kRefused) {
    fabric_log().warn(
        "libfabric shm: {} is {}: peers cannot read each other's memory, so shm copies messages over 4 KiB "
        "through its segment buffers, where a few messages sent before their receives were posted can hold "
        "up later ones on other tags; provider tcp does not have this limit (docs/fabric-performance.md, "
        "\"shm without cross-memory attach\")",
        kPtraceScopePath, scope ? std::to_string(*scope) : std::string("unreadable"));
  }
  return access;
}

}  // namespace

CrossMemoryAccess cross_memory_access_for(std::optional<int> scope) {
  if (!scope || *scope <= 0) return CrossMemoryAccess::kOpen;
  if (*scope == 1) return CrossMemoryAccess::kLiftedByPrctl;
  return CrossMemoryAccess::kRefused;
}

CrossMemoryAccess allow_peers_to_read_this_process() {
  static std::once_flag once;
  static CrossMemoryAccess access = CrossMemoryAccess::kOpen;
  std::call_once(once, [] { access = arrange(); });
  return access;
}

}  // namespace murmur::fabric::libfabric
