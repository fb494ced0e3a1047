// Where this process sits in a job: rank, world size, rendezvous, token,
// host name and link profile, from an explicit PeerConfig first and the
// environment after it (murmur-run's MURMUR_*, then Slurm, then Open MPI).
// Under srun with no MURMUR_RENDEZVOUS, the rendezvous comes from Slurm's
// variables too (slurm_rendezvous.h).
// The order and the variables are documented in include/murmur/peer.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "murmur/peer.h"

namespace murmur::peer {

struct JobEnvironment {
  int rank = 0;
  int world_size = 1;
  std::string rank_source = "default";  // "flag", "MURMUR_RANK", "SLURM_PROCID", ...: for messages
  std::string rendezvous_host;          // empty: none given
  std::uint16_t rendezvous_port = 0;
  std::string rendezvous_source;  // "rendezvous", "MURMUR_RENDEZVOUS", "SLURM_STEP_RESV_PORTS", ...
  // Rank 0 serves the rendezvous itself: PeerConfig::host_rendezvous, or a
  // Slurm step with no MURMUR_RENDEZVOUS (slurm_rendezvous.h).
  bool host_rendezvous = false;
  std::string token;
  std::string job_token;  // MURMUR_JOB_TOKEN; never a flag (ps would show it)
  std::string host_name;
  std::string link_profile;
  std::string interface;  // PeerConfig::interface, else $MURMUR_INTERFACE; empty: murmur's choice
  // Join a running job as a new member (PeerConfig::join, MURMUR_JOIN=1, or
  // MURMUR_RESTART_COUNT > 0: a peer murmur-run restarted); rank and world
  // size then only describe the launch, the job assigns the rank.
  bool joining = false;
  // Where this peer writes its timeline (PeerConfig::trace, else
  // MURMUR_TRACE); empty: no trace.
  std::string trace_path;
};

// Reads one environment variable; nullopt when unset. Tests pass a map.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvironmentLookup process_environment();

// Throws std::invalid_argument naming the variable or field and its value:
// a rank or size that is not a number, a rank outside [0, size), only one of
// a rank/size pair, a rendezvous that is not host:port, a job of more than
// one rank without a rendezvous.
JobEnvironment resolve_job_environment(const PeerConfig& config, const EnvironmentLookup& lookup);

// "host:port" -> {host, port}; `what` names the source in the error.
std::pair<std::string, std::uint16_t> parse_host_port(const std::string& text, const std::string& what);

}  // namespace murmur::peer
