#include "fabric/libfabric/cross_memory_access.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "common/log.h"
#include "fabric/libfabric/environment.h"

namespace murmur::fabric::libfabric {
namespace {

constexpr const char* kPtraceScopePath = "/proc/sys/kernel/yama/ptrace_scope";

// nullopt only where there is no Yama; a file there that cannot be read
// is taken as scope 1, so the prctl is tried (it is harmless without Yama).
std::optional<int> read_ptrace_scope() {
  std::error_code ec;
  if (!std::filesystem::exists(kPtraceScopePath, ec)) return std::nullopt;
  std::ifstream file(kPtraceScopePath);
  int scope = 0;
  if (!(file >> scope)) return 1;
  return scope;
}

bool ptracer_turned_off() {
  const char* value = std::getenv("MURMUR_SHM_PTRACER");
  return value != nullptr && std::strcmp(value, "0") == 0;
}

void warn_single_copy_refused(const std::string& why) {
  fabric_log().warn(
      "libfabric shm: {}: peers cannot read each other's memory, so shm copies messages over 4 KiB through its "
      "segment buffers, where a few messages sent before their receives were posted can hold up later ones on "
      "other tags; provider tcp does not have this limit (docs/fabric-performance.md, \"shm without "
      "cross-memory attach\")",
      why);
}

CrossMemoryAccess arrange() {
  if (cma_disabled_by_environment()) {
    warn_single_copy_refused("FI_SHM_DISABLE_CMA is set");
    return CrossMemoryAccess::kRefused;
  }
  const std::optional<int> scope = read_ptrace_scope();
  const CrossMemoryAccess access = cross_memory_access_for(scope);
  if (access == CrossMemoryAccess::kRefused) {
    warn_single_copy_refused(std::string(kPtraceScopePath) + " is " + std::to_string(*scope));
    return access;
  }
  if (access != CrossMemoryAccess::kLiftedByPrctl) return access;
  if (ptracer_turned_off()) {
    warn_single_copy_refused(std::string(kPtraceScopePath) + " is 1 and MURMUR_SHM_PTRACER=0");
    return CrossMemoryAccess::kRefused;
  }
  if (::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0) {
    warn_single_copy_refused(std::string("prctl(PR_SET_PTRACER_ANY) failed: ") + std::strerror(errno));
    return CrossMemoryAccess::kRefused;
  }
  fabric_log().info(
      "libfabric shm: {} is 1, so this process lets processes of its user ptrace it (PR_SET_PTRACER_ANY) for "
      "shm's single-copy transfers; MURMUR_SHM_PTRACER=0 turns that off",
      kPtraceScopePath);
  return access;
}

}  // namespace

CrossMemoryAccess cross_memory_access_for(std::optional<int> scope) {
  if (!scope || *scope <= 0) return CrossMemoryAccess::kOpen;
  if (*scope == 1) return CrossMemoryAccess::kLiftedByPrctl;
  return CrossMemoryAccess::kRefused;
}

bool cma_disabled_by_environment() { return environment_bool("FI_SHM_DISABLE_CMA").value_or(false); }

CrossMemoryAccess allow_peers_to_read_this_process() {
  // Per process, not std::call_once: a forked child inherits a finished
  // once_flag but not its parent's PR_SET_PTRACER.
  static std::mutex mutex;
  static pid_t arranged_for = 0;
  static CrossMemoryAccess access = CrossMemoryAccess::kOpen;
  std::lock_guard<std::mutex> lock(mutex);
  if (arranged_for != ::getpid()) {
    access = arrange();
    arranged_for = ::getpid();
  }
  return access;
}

}  // namespace murmur::fabric::libfabric
