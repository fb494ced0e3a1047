// The Boost.Asio backend: one TCP connection per peer pair, plain sockets.
// Serves hosts without libfabric and is the measured baseline for it.
#pragma once

#include <memory>

#include "fabric/transport_options.h"

namespace murmur::fabric::asio {

std::unique_ptr<Transport> make_transport(const TransportOptions& options);

}  // namespace murmur::fabric::asio
