#include "fabric/asio/transport.h"
#include "fabric/errors.h"
#include "fabric/libfabric/transport.h"
#include "fabric/transport_options.h"

namespace murmur::fabric {

std::unique_ptr<Transport> make_transport(const TransportOptions& options) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    throw FabricError("transport options: rank " + std::to_string(options.rank) + " is outside a group of size " +
                      std::to_string(options.size));
  }
  if (options.backend == "libfabric") return libfabric::make_transport(options);
  if (options.backend == "asio") return asio::make_transport(options);
  throw FabricError("unknown fabric backend '" + options.backend + "' (expected libfabric or asio)");
}

}  // namespace murmur::fabric
