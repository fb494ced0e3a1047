// The libfabric backend: tagged messages on an FI_EP_RDM endpoint over the
// tcp (tcp;ofi_rxm), net (libfabric 1.17's native TCP endpoint; endpoint.cc
// says why it is not the default), shm or verbs (verbs;ofi_rxm) provider.
#pragma once

#include <memory>

#include "fabric/transport_options.h"

namespace murmur::fabric::libfabric {

// options.provider is "tcp", "net", "shm", "verbs" or "auto". Throws FabricError
// (naming the provider and fi_strerror) when the provider is not available.
std::unique_ptr<Transport> make_transport(const TransportOptions& options);

// True when a verbs device is usable on this host (used by "auto" and by
// tests that skip without RDMA hardware).
bool verbs_available();

}  // namespace murmur::fabric::libfabric
