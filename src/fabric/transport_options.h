// Options and the factory for data-plane transports.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/job_token.h"
#include "fabric/transport.h"

namespace murmur::fabric {

struct TransportOptions {
  // "libfabric" or "asio".
  std::string backend = "libfabric";
  // libfabric provider: "tcp", "net", "shm", "verbs", a pair "shm+tcp",
  // "shm+net" or "shm+verbs" (shm to the peers on this machine, the second to
  // the others: per_link_transport.h), or "auto": verbs if an RDMA device is
  // present (shm+verbs when ranks_share_machines), else shm when
  // peers_on_this_host, shm+tcp when ranks_share_machines, else tcp; never
  // shm when loss_tolerant (below).
  std::string provider = "auto";
  // Set by the bootstrap once membership is known (common/host.h,
  // machine_identity): every rank runs on this machine; not so, but at
  // least two ranks of the job share a machine (this one or another). The
  // second is the same on every rank, so that "auto" opens per-link
  // transports on all of them or on none: both ends of a link must agree.
  bool peers_on_this_host = false;
  bool ranks_share_machines = false;
  // This rank's machine identity, which a per-link transport publishes and
  // routes by; empty: machine_identity().
  std::string machine;
  // The job goes on when peers are lost (membership views): "auto" then
  // never picks shm. libfabric 1.17's shm provider can stop moving the
  // survivors' messages to each other once a peer dies in the middle of a
  // transfer (every survivor waits in the same round, heartbeats alive;
  // measured with bench/resilience/chaos.py, docs/resilience.md), which no
  // failure of ours can excuse. tcp on loopback has no shared state.
  bool loss_tolerant = false;
  int rank = 0;
  int size = 1;
  // Address to bind (tcp and asio). Empty: the loopback address when every
  // peer is on this machine, else the backend's choice (libfabric tcp: the
  // first interface it lists; asio: every address, advertised by host name).
  std::string bind_host;
  // Non-empty: a backend admits a peer only once it proved this job token
  // (asio: a challenge in both directions at connection set-up; libfabric:
  // see docs/security.md for what it does and does not check). Defaults to
  // $MURMUR_JOB_TOKEN; Group sets it from GroupOptions::job_token.
  std::string job_token = job_token::from_environment();
  // connect() gives up after this long.
  std::chrono::milliseconds connect_timeout{30000};
  // Messages larger than this travel as several chunks, pipelined.
  std::size_t chunk_bytes = std::size_t{4} << 20;
  // Most bytes a backend that buffers messages itself (asio) holds per peer
  // for messages that arrived before their receive was posted. A peer that
  // sends more has its link failed rather than this process's memory
  // exhausted: what arrives from the network is untrusted.
  std::size_t max_unexpected_bytes = std::size_t{2} << 30;
  // libfabric: the most a progress thread polls, with operations in flight,
  // before it blocks (libfabric/spin_policy.h: adaptive, never while idle).
  // asio: the most a waiting thread polls its request before it sleeps
  // (spin_wait_driver.h); libfabric's callers on shm too. Zero: always
  // block at once.
  // $MURMUR_FABRIC_SPIN_US overrides it (make_transport).
  // docs/fabric-performance.md has what it buys and costs.
  std::chrono::microseconds max_spin{50};
  // asio: which links' frames carry a checksum of their payload.
  // kOffHost: every link whose bytes leave this machine, and not those the
  // kernel moves from memory to memory (loopback: the peer's address is a
  // loopback address or this socket's own), where no wire or NIC can
  // corrupt what TCP's checksum misses; there it cost asio a third of its
  // speed at 1 MiB (docs/fabric-performance.md, "asio: checksums where a
  // wire is"). kAlways: every link. $MURMUR_ASIO_PAYLOAD_CHECKSUM
  // (off-host, always) overrides it (make_transport). Frame headers are
  // checksummed on every link.
  enum class PayloadChecksum { kOffHost, kAlways };
  PayloadChecksum asio_payload_checksum = PayloadChecksum::kOffHost;
};

// Opens a transport of the kind `options` asks for. Throws FabricError naming
// the backend or provider when it is unknown or unavailable on this host
// (e.g. "verbs" without an RDMA device).
std::unique_ptr<Transport> make_transport(const TransportOptions& options);

}  // namespace murmur::fabric
