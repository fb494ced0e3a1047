#include "peer/api/job_environment.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>

#include "common/host.h"
#include "common/job_token.h"
#include "peer/api/slurm_rendezvous.h"

namespace murmur::peer {

namespace {

int parse_int(const std::string& text, const std::string& what) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    throw std::invalid_argument(what + "='" + text + "' is not an integer");
  }
  return value;
}

struct RankSource {
  const char* rank;
  const char* size;
};

// The launchers whose variables we understand, in the order they win.
constexpr RankSource kRankSources[] = {
    {"MURMUR_RANK", "MURMUR_WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_NTASKS"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
};

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::pair<std::string, std::uint16_t> parse_host_port(const std::string& text, const std::string& what) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::invalid_argument(what + "='" + text + "': expected host:port");
  }
  const int port = parse_int(text.substr(colon + 1), what + " port");
  if (port <= 0 || port > 65535) throw std::invalid_argument(what + "='" + text + "': port out of range 1..65535");
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, static_cast<std::uint16_t>(port)};
}

JobEnvironment resolve_job_environment(const PeerConfig& config, const EnvironmentLookup& lookup) {
  JobEnvironment env;
  if (config.rank >= 0 || config.world_size > 0) {
    if (config.rank < 0 || config.world_size <= 0) {
      throw std::invalid_argument("rank and world size must be given together (rank " + std::to_string(config.rank) +
                                  ", world size " + std::to_string(config.world_size) + ")");
    }
    env.rank = config.rank;
    env.world_size = config.world_size;
    env.rank_source = "configuration";
  } else {
    for (const auto& source : kRankSources) {
      auto rank = lookup(source.rank);
      auto size = lookup(source.size);
      if (!rank && !size) continue;
      if (!rank || !size) {
        throw std::invalid_argument(std::string(rank ? source.rank : source.size) + " is set but " +
                                    (rank ? source.size : source.rank) + " is not");
      }
      env.rank = parse_int(*rank, source.rank);
      env.world_size = parse_int(*size, source.size);
      env.rank_source = std::string(source.rank) + "/" + source.size;
      break;
    }
  }
  const bool from_slurm = env.rank_source == "SLURM_PROCID/SLURM_NTASKS";
  if (from_slurm && env.world_size > 1 && !lookup("SLURM_STEP_ID") && !lookup("SLURM_STEPID")) {
    // sbatch sets SLURM_PROCID=0 and SLURM_NTASKS for the batch script
    // itself: every process started from it would be rank 0 and wait for
    // ranks that never come.
    throw std::invalid_argument("SLURM_PROCID/SLURM_NTASKS are the batch script's (" + std::to_string(env.world_size) +
                                " tasks, no SLURM_STEP_ID): start the peers with srun, one task per rank");
  }
  if (env.world_size <= 0) {
    throw std::invalid_argument("world size " + std::to_string(env.world_size) + " (from " + env.rank_source +
                                ") must be positive");
  }
  if (env.rank < 0 || env.rank >= env.world_size) {
    throw std::invalid_argument("rank " + std::to_string(env.rank) + " is outside 0.." +
                                std::to_string(env.world_size - 1) + " (from " + env.rank_source + ")");
  }

  std::string rendezvous = config.rendezvous;
  std::string rendezvous_source = "rendezvous";
  if (rendezvous.empty()) {
    rendezvous = lookup("MURMUR_RENDEZVOUS").value_or("");
    rendezvous_source = "MURMUR_RENDEZVOUS";
  }
  env.token = !config.token.empty() ? config.token : lookup("MURMUR_TOKEN").value_or("");
  env.host_rendezvous = config.host_rendezvous;
  if (!rendezvous.empty()) {
    std::tie(env.rendezvous_host, env.rendezvous_port) = parse_host_port(rendezvous, rendezvous_source);
    env.rendezvous_source = rendezvous_source;
  } else if (from_slurm && env.world_size > 1) {
    // srun with no launcher of ours: rank 0 serves the rendezvous where
    // every task can compute it (slurm_rendezvous.h).
    if (const auto slurm = slurm_rendezvous(lookup)) {
      env.rendezvous_host = slurm->host;
      env.rendezvous_port = slurm->port;
      env.host_rendezvous = true;
      if (env.token.empty()) env.token = slurm->token;
      env.rendezvous_source = slurm->port_source;
    }
  }
  if (env.rendezvous_host.empty() && env.world_size > 1) {
    throw std::invalid_argument("a job of " + std::to_string(env.world_size) + " ranks (from " + env.rank_source +
                                ") needs a rendezvous: launch with murmur-run, or set MURMUR_RENDEZVOUS=host:port "
                                "(with --host-rendezvous on rank 0 to serve it there)");
  }
  env.job_token = lookup(job_token::kEnvironmentVariable).value_or("");
  env.host_name = !config.host_name.empty() ? config.host_name : lookup("MURMUR_HOST").value_or("");
  if (env.host_name.empty()) env.host_name = local_host_name();
  env.link_profile = !config.link_profile.empty() ? config.link_profile : lookup("MURMUR_LINK_PROFILE").value_or("");
  env.interface = !config.interface.empty() ? config.interface : lookup("MURMUR_INTERFACE").value_or("");
  env.trace_path = !config.trace.empty() ? config.trace : lookup("MURMUR_TRACE").value_or("");
  const auto join = lookup("MURMUR_JOIN");
  const auto restarts = lookup("MURMUR_RESTART_COUNT");
  if (join && *join != "0" && *join != "1") throw std::invalid_argument("MURMUR_JOIN='" + *join + "' is not 0 or 1");
  env.joining = config.join || (join && *join == "1") || (restarts && parse_int(*restarts, "MURMUR_RESTART_COUNT") > 0);
  if (env.joining && env.rendezvous_host.empty())
    throw std::invalid_argument("joining a running job needs its rendezvous (MURMUR_RENDEZVOUS=host:port)");
  return env;
}

}  // namespace murmur::peer
