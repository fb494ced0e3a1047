#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <mutex>

namespace murmur {
namespace {

std::mutex g_mutex;  // guards g_pattern and logger creation
std::string g_pattern = "[%H:%M:%S.%e] [%n] [%l] %v";

spdlog::level::level_enum level_from_env() {
  const char* env = std::getenv("MURMUR_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return spdlog::level::info;
  auto level = spdlog::level::from_str(env);
  // from_str answers "off" for unknown names; say so rather than go silent.
  if (level == spdlog::level::off && std::string(env) != "off") {
    spdlog::warn("MURMUR_LOG_LEVEL={} is not a level (trace, debug, info, warn, error, critical, off); using info",
                 env);
    return spdlog::level::info;
  }
  return level;
}

}  // namespace

std::shared_ptr<spdlog::logger> logger(const std::string& subsystem) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto existing = spdlog::get(subsystem)) return existing;
  // Logs go to stderr so that stdout stays for results and tables.
  auto made = spdlog::stderr_color_mt(subsystem);
  made->set_level(level_from_env());
  made->set_pattern(g_pattern);
  return made;
}

void set_log_rank(int rank) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_pattern = "[%H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%n] [%l] %v";
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->set_pattern(g_pattern); });
}

}  // namespace murmur
