#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace murmur {
namespace {

// The loggers outlive static destruction on purpose. A libfabric progress
// thread that shutdown() abandoned (fabric/libfabric/transport.cc) may finish
// and log while the process exits, after spdlog's registry and this file's
// statics are destroyed: looking the logger up there was a heap-use-after-free
// (TSan, fabric_test_peer). So the loggers and the pattern live in one LogState
// that is allocated once and never freed, and a logger, once made, is found
// here without asking spdlog's registry.
struct LogState {
  std::mutex mutex;  // guards pattern and loggers
  std::string pattern = "[%H:%M:%S.%e] [%n] [%l] %v";
  std::map<std::string, std::shared_ptr<spdlog::logger>> loggers;
};

LogState& log_state() {
  static LogState* const state = new LogState;  // never freed: see LogState
  return *state;
}

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
  LogState& state = log_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (auto known = state.loggers.find(subsystem); known != state.loggers.end()) return known->second;
  auto made = spdlog::get(subsystem);
  if (!made) {
    // Logs go to stderr so that stdout stays for results and tables.
    made = spdlog::stderr_color_mt(subsystem);
    made->set_level(level_from_env());
    made->set_pattern(state.pattern);
  }
  state.loggers.emplace(subsystem, made);
  return made;
}

void set_log_rank(int rank) {
  LogState& state = log_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.pattern = "[%H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%n] [%l] %v";
  spdlog::apply_all([&state](const std::shared_ptr<spdlog::logger>& l) { l->set_pattern(state.pattern); });
}

}  // namespace murmur
