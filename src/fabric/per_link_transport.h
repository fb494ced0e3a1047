// The per-link transport: one job, two kinds of link. Peers on this machine
// (common/host.h, machine_identity) are reached through a `local` transport
// (libfabric shm: a copy through shared memory, no network stack), all
// others through a `remote` one (libfabric tcp or verbs), as NCCL moves
// bytes through shared memory inside a node and over the network between
// nodes. Both are ordinary Transports; this one only routes.
//
// Address: what address() returns and peers publish is a framed record,
// "MPL1", then the machine identity, and the name and address of each inner
// transport (per_link_transport.cc has the layout). Another rank's record
// is untrusted: every length is checked, and a record that is malformed,
// not a per-link one, or names other inner transports fails connect() /
// add_peer() with PeerError naming that rank and host (every rank of a job
// must open the same kinds: Group sees to it, joiners included).
//
// Routing: peer r goes through `local` when its machine identity equals
// this rank's, else through `remote`; this rank itself through `remote`.
// The inner transport that does not serve r is told r is absent (connect)
// or never learns it (add_peer), so it could not carry r's messages by
// mistake. The order of messages per (source, destination, tag) is the
// inner transport's: one link, one inner transport.
//
// Thread safety: as Transport. The route table is guarded by a mutex that
// isendv / irecv hold for a lookup only; nothing here blocks beyond the
// inner transports' own calls. Ownership: both inner transports are owned
// and destroyed with this one (remote first, then local).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "fabric/transport.h"

namespace murmur::fabric {

// What a per-link transport offers beyond Transport; reach it with
// dynamic_cast<PerLinkTransport*>.
class PerLinkTransport : public Transport {
 public:
  // The inner transport's name() that carries messages to `peer`, or ""
  // for a rank not known (yet). For tests, logs and the peer's summary.
  virtual std::string link_name(int peer) const = 0;
};

// Takes ownership of both (connected to nothing yet: make_transport's
// results). `machine` is this rank's machine identity. name() reads
// "<local name>+<remote provider>", e.g. "libfabric:shm+tcp".
std::unique_ptr<Transport> make_per_link_transport(std::unique_ptr<Transport> local, std::unique_ptr<Transport> remote,
                                                   std::string machine);

// The inner transports' names of a per-link address ("libfabric:shm" and
// "libfabric:tcp"), or nullopt when `address` is not one (a plain
// transport's address, or malformed). Joiners read a member's address with
// it to open the kind the job uses.
std::optional<std::pair<std::string, std::string>> per_link_inner_names(const std::string& address);

}  // namespace murmur::fabric
