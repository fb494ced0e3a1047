#include <charconv>
#include <cstdlib>
#include <cstring>

#include "common/host.h"
#include "fabric/asio/transport.h"
#include "fabric/errors.h"
#include "fabric/libfabric/transport.h"
#include "fabric/per_link_transport.h"
#include "fabric/transport_options.h"

namespace murmur::fabric {

namespace {

// The remote half of a per-link provider ("shm+tcp" -> "tcp"; "auto" when
// auto should use one), or "" for a provider of one kind.
std::string per_link_remote(const TransportOptions& options) {
  const std::string& asked = options.provider;
  if (const auto plus = asked.find('+'); plus != std::string::npos) {
    const std::string local = asked.substr(0, plus);
    const std::string remote = asked.substr(plus + 1);
    if (local != "shm" || (remote != "tcp" && remote != "net" && remote != "verbs")) {
      throw FabricError("unknown libfabric provider pair '" + asked +
                        "' (expected shm+tcp, shm+net or shm+verbs: shm inside a machine, the other between machines)");
    }
    return remote;
  }
  if (asked == "auto" && options.ranks_share_machines && !options.peers_on_this_host && !options.loss_tolerant)
    return "auto";
  return {};
}

std::unique_ptr<Transport> make_libfabric_transport(const TransportOptions& options) {
  const std::string remote = per_link_remote(options);
  if (remote.empty()) return libfabric::make_transport(options);
  // The remote half first: tcp's tuning of rxm must run before anything
  // initialises libfabric (libfabric/endpoint.cc, tune_rxm_for_tcp).
  TransportOptions remote_options = options;
  remote_options.provider = remote;
  remote_options.peers_on_this_host = false;
  auto remote_transport = libfabric::make_transport(remote_options);
  TransportOptions local_options = options;
  local_options.provider = "shm";
  local_options.peers_on_this_host = true;
  auto local_transport = libfabric::make_transport(local_options);
  return make_per_link_transport(std::move(local_transport), std::move(remote_transport),
                                 options.machine.empty() ? machine_identity() : options.machine);
}

}  // namespace

std::unique_ptr<Transport> make_transport(const TransportOptions& options) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    throw FabricError("transport options: rank " + std::to_string(options.rank) + " is outside a group of size " +
                      std::to_string(options.size));
  }
  // Both backends spin (TransportOptions::max_spin); the variable overrides it.
  TransportOptions resolved = options;
  if (const char* spin = std::getenv("MURMUR_FABRIC_SPIN_US"); spin != nullptr && *spin != '\0') {
    long us = -1;
    const auto [end, ec] = std::from_chars(spin, spin + std::strlen(spin), us);
    if (ec != std::errc() || *end != '\0' || us < 0 || us > 10000)
      throw FabricError(std::string("MURMUR_FABRIC_SPIN_US='") + spin +
                        "' is not a number of microseconds in [0, 10000]");
    resolved.max_spin = std::chrono::microseconds(us);
  }
  if (resolved.backend == "libfabric") return make_libfabric_transport(resolved);
  if (resolved.backend == "asio") {
    if (resolved.provider.find('+') != std::string::npos)
      throw FabricError("provider '" + resolved.provider + "' needs the libfabric backend (asio has one kind of link)");
    if (const char* checksum = std::getenv("MURMUR_ASIO_PAYLOAD_CHECKSUM"); checksum != nullptr && *checksum != '\0') {
      const std::string value = checksum;
      if (value == "off-host") {
        resolved.asio_payload_checksum = TransportOptions::PayloadChecksum::kOffHost;
      } else if (value == "always") {
        resolved.asio_payload_checksum = TransportOptions::PayloadChecksum::kAlways;
      } else {
        throw FabricError("MURMUR_ASIO_PAYLOAD_CHECKSUM='" + value + "' is not one of off-host, always");
      }
    }
    return asio::make_transport(resolved);
  }
  throw FabricError("unknown fabric backend '" + options.backend + "' (expected libfabric or asio)");
}

}  // namespace murmur::fabric
