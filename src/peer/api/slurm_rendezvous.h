// Where a job started by Slurm's srun finds its rendezvous when nobody set
// MURMUR_RENDEZVOUS: rank 0 serves it on the first node of the step, at a
// port Slurm reserved for the step or, without one, a port derived from the
// job and step ids. Every task of the step computes the same answer from its
// own environment, so no launcher is involved (docs/launching.md, "Slurm").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "peer/api/job_environment.h"

namespace murmur::peer {

struct SlurmRendezvous {
  std::string host;
  std::uint16_t port = 0;
  // "slurm-JOB.STEP": a peer of another step that reaches this port by
  // mistake is refused by the rendezvous instead of joining.
  std::string token;
  std::string port_source;  // "SLURM_STEP_RESV_PORTS" or "SLURM_JOB_ID/SLURM_STEP_ID": for messages
};

// Ports derived from the job and step ids lie in [kFirstDerivedPort,
// kFirstDerivedPort + kDerivedPorts): below Linux's ephemeral range, so an
// outgoing connection never holds the port rank 0 needs.
inline constexpr std::uint16_t kFirstDerivedPort = 12000;
inline constexpr int kDerivedPorts = 20000;

// nullopt when this is not a Slurm step (SLURM_STEP_NODELIST, SLURM_NODELIST
// and SLURM_JOB_NODELIST all unset). Throws std::invalid_argument naming the
// variable and its value when one is malformed.
std::optional<SlurmRendezvous> slurm_rendezvous(const EnvironmentLookup& lookup);

// The first host of a Slurm hostlist expression: "node[07-09,12],gpu1" ->
// "node07" (zero padding kept), "a[1-2]-ib[3-4]" -> "a1-ib3". Throws
// std::invalid_argument on an unbalanced bracket or an empty list.
std::string first_host_of_hostlist(const std::string& hostlist);

}  // namespace murmur::peer
