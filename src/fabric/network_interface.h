// Which local address the data plane binds to, chosen by interface name or
// by subnet, as NCCL_SOCKET_IFNAME and FI_TCP_IFACE choose theirs: a host
// with an Ethernet port for management and an InfiniBand or 10GbE port for
// training must put the gossip on the second, and "this host's name" may
// resolve to the first.
//
//   resolve_interface("ib0")          -> "192.168.10.4" (ib0's IPv4 address)
//   resolve_interface("10.77.0.0/24") -> the local address inside that subnet
//
// Thread safety: both functions read the kernel's list (getifaddrs) and
// keep no state. Blocking: a system call, no network I/O.
#pragma once

#include <string>
#include <vector>

namespace murmur::fabric {

struct InterfaceAddress {
  std::string interface;  // "eth0"
  std::string address;    // "10.77.0.1" or "fe80::1" (no scope suffix)
  int prefix_length = 0;  // the subnet's, from the netmask
  bool ipv6 = false;
};

// Every address of every interface that is up, in the kernel's order.
std::vector<InterfaceAddress> local_interface_addresses();

// The address to bind for `spec`: an interface name (its first IPv4
// address, else its first IPv6 one) or a subnet "address/prefix" (IPv4 or
// IPv6; the first local address inside it). Throws std::invalid_argument
// that names the spec and lists this host's interfaces and addresses when
// nothing matches or the spec is malformed. `addresses` defaults to this
// host's (tests pass their own).
std::string resolve_interface(const std::string& spec);
std::string resolve_interface(const std::string& spec, const std::vector<InterfaceAddress>& addresses);

}  // namespace murmur::fabric
