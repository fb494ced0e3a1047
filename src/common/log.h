// One spdlog logger per subsystem: fabric, gossip, sched, peer, rendezvous.
//
// The level comes from MURMUR_LOG_LEVEL (trace, debug, info, warn, error,
// critical, off; default info), read once when a logger is first made. A
// process may prefix every line with its rank by calling set_log_rank().
// Thread-safe: loggers are created under a lock and spdlog's *_mt sinks are
// used. Loggers are never destroyed, so a thread may log until the process
// ends, static destruction included (an abandoned progress thread does).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace murmur {

// Returns the logger named `subsystem`, creating it on first use.
std::shared_ptr<spdlog::logger> logger(const std::string& subsystem);

// Convenience accessors for the fixed subsystems.
inline spdlog::logger& fabric_log() { return *logger("fabric"); }
inline spdlog::logger& rendezvous_log() { return *logger("rendezvous"); }
inline spdlog::logger& gossip_log() { return *logger("gossip"); }
inline spdlog::logger& sched_log() { return *logger("sched"); }
inline spdlog::logger& peer_log() { return *logger("peer"); }

// Tags this process's log lines with "rank N" (existing loggers included).
void set_log_rank(int rank);

}  // namespace murmur
