#include "peer/api/slurm_rendezvous.h"

#include <charconv>
#include <stdexcept>

namespace murmur::peer {

namespace {

long long parse_number(const std::string& text, const std::string& what) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0) {
    throw std::invalid_argument(what + "='" + text + "' is not a non-negative integer");
  }
  return value;
}

// "12001-12002" or "12001,12005" or "12001": the first port.
std::uint16_t first_reserved_port(const std::string& ports) {
  const auto end = ports.find_first_of("-,");
  const auto port = parse_number(ports.substr(0, end), "SLURM_STEP_RESV_PORTS");
  if (port < 1 || port > 65535) {
    throw std::invalid_argument("SLURM_STEP_RESV_PORTS='" + ports + "': port out of range 1..65535");
  }
  return static_cast<std::uint16_t>(port);
}

}  // namespace

std::string first_host_of_hostlist(const std::string& hostlist) {
  std::string host;
  std::size_t i = 0;
  while (i < hostlist.size() && hostlist[i] != ',') {
    if (hostlist[i] != '[') {
      host += hostlist[i++];
      continue;
    }
    const auto close = hostlist.find(']', i);
    if (close == std::string::npos) {
      throw std::invalid_argument("Slurm hostlist '" + hostlist + "': '[' without ']'");
    }
    // Inside the brackets: the first element of the first range.
    const std::string ranges = hostlist.substr(i + 1, close - i - 1);
    const std::string first = ranges.substr(0, ranges.find_first_of("-,"));
    if (first.empty()) throw std::invalid_argument("Slurm hostlist '" + hostlist + "': empty range");
    host += first;
    i = close + 1;
  }
  if (host.empty()) throw std::invalid_argument("Slurm hostlist '" + hostlist + "' names no host");
  return host;
}

std::optional<SlurmRendezvous> slurm_rendezvous(const EnvironmentLookup& lookup) {
  // The step's nodes first: an srun inside a larger sbatch allocation runs
  // on the step's nodes, and rank 0 on the first of them.
  std::optional<std::string> nodes;
  std::string nodes_variable;
  for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"}) {
    nodes = lookup(name);
    nodes_variable = name;
    if (nodes) break;
  }
  if (!nodes) return std::nullopt;

  SlurmRendezvous rendezvous;
  try {
    rendezvous.host = first_host_of_hostlist(*nodes);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(nodes_variable + ": " + e.what());
  }
  const auto job = lookup("SLURM_JOB_ID");
  if (!job) throw std::invalid_argument(nodes_variable + " is set but SLURM_JOB_ID is not");
  const long long job_id = parse_number(*job, "SLURM_JOB_ID");
  auto step = lookup("SLURM_STEP_ID");
  if (!step) step = lookup("SLURM_STEPID");
  const long long step_id = step ? parse_number(*step, "SLURM_STEP_ID") : 0;
  rendezvous.token = "slurm-" + std::to_string(job_id) + "." + std::to_string(step_id);

  if (const auto reserved = lookup("SLURM_STEP_RESV_PORTS"); reserved && !reserved->empty()) {
    rendezvous.port = first_reserved_port(*reserved);
    rendezvous.port_source = "SLURM_STEP_RESV_PORTS";
  } else {
    // 16 steps per job before two steps of one job share a port; jobs far
    // apart in id may collide, and the second fails to bind, naming the port.
    const long long slot = (job_id * 16 + step_id % 16) % kDerivedPorts;
    rendezvous.port = static_cast<std::uint16_t>(kFirstDerivedPort + slot);
    rendezvous.port_source = "SLURM_JOB_ID/SLURM_STEP_ID";
  }
  return rendezvous;
}

}  // namespace murmur::peer
