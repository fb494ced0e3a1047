// Placeholder while the backend is written; replaced by the real one.
#include "fabric/asio/transport.h"
#include "fabric/errors.h"
namespace murmur::fabric::asio {
std::unique_ptr<Transport> make_transport(const TransportOptions&) { throw FabricError("asio backend not built yet"); }
}
