// The libfabric backend: tagged messages on an FI_EP_RDM endpoint over the
// tcp (tcp;ofi_rxm), shm or verbs (verbs;ofi_rxm) provider.
#pragma once

#include <memory>

#include "fabric/transport_options.h"

namespace murmur::fabric::libfabric {

// options.provider is "tcp", "shm", "verbs" or "auto". Throws FabricError
// (naming the provider and fi_strerror) when the provider is not available.
std::unique_ptr<Transport> make_transport(const TransportOptions& options);

// True when a verbs device is usable on this host (used by "auto" and by
// tests that skip without RDMA hardware).
bool verbs_available();

// Removes the shm regions of process `pid` (named "murmur-<pid>-*" in
// /dev/shm). A process killed with SIGKILL cannot unlink its own; launchers
// call this after reaping a peer so that killed jobs do not leak memory.
void remove_shm_regions_of(int pid);

}  // namespace murmur::fabric::libfabric
