#include <charconv>
#include <cstdlib>
#include <cstring>

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
  if (options.backend == "libfabric") {
    if (const char* spin = std::getenv("MURMUR_FABRIC_SPIN_US"); spin != nullptr && *spin != '\0') {
      long us = -1;
      const auto [end, ec] = std::from_chars(spin, spin + std::strlen(spin), us);
      if (ec != std::errc() || *end != '\0' || us < 0 || us > 10000)
        throw FabricError(std::string("MURMUR_FABRIC_SPIN_US='") + spin +
                          "' is not a number of microseconds in [0, 10000]");
      TransportOptions spun = options;
      spun.max_spin = std::chrono::microseconds(us);
      return libfabric::make_transport(spun);
    }
    return libfabric::make_transport(options);
  }
  if (options.backend == "asio") return asio::make_transport(options);
  throw FabricError("unknown fabric backend '" + options.backend + "' (expected libfabric or asio)");
}

}  // namespace murmur::fabric
