// Placeholder while the backend is written; replaced by the real one.
#include "fabric/libfabric/transport.h"
#include "fabric/errors.h"
namespace murmur::fabric::libfabric {
std::unique_ptr<Transport> make_transport(const TransportOptions&) { throw FabricError("libfabric backend not built yet"); }
}
namespace murmur::fabric::libfabric { bool verbs_available() { return false; } }
