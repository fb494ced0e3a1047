// The libfabric backend: tagged messages on an FI_EP_RDM endpoint over the
// tcp (tcp;ofi_rxm), net (libfabric 1.17's native TCP endpoint; endpoint.cc
// says why it is not the default), shm or verbs (verbs;ofi_rxm) provider.
#pragma once

#include <memory>
#include <string>

#include "fabric/transport_options.h"

namespace murmur::fabric::libfabric {

// options.provider is "tcp", "net", "shm", "verbs" or "auto". Throws FabricError
// (naming the provider and fi_strerror) when the provider is not available.
std::unique_ptr<Transport> make_transport(const TransportOptions& options);

// True when fi_getinfo finds an RDM endpoint of the libfabric provider
// named `provider` ("net", "shm", "verbs": libfabric's name, not murmur's
// "tcp", which is tcp;ofi_rxm) on this host: the libfabric build has it
// and, for verbs, a device is usable (used by "auto" and by tests that
// skip without it).
bool provider_available(const std::string& provider);
bool verbs_available();

}  // namespace murmur::fabric::libfabric
