#include "fabric/network_interface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace murmur::fabric {
namespace {

int prefix_of(const sockaddr* mask) {
  if (mask == nullptr) return 0;
  int bits = 0;
  if (mask->sa_family == AF_INET) {
    bits = std::popcount(reinterpret_cast<const sockaddr_in*>(mask)->sin_addr.s_addr);
  } else if (mask->sa_family == AF_INET6) {
    for (unsigned char byte : reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr.s6_addr)
      bits += std::popcount(static_cast<unsigned>(byte));
  }
  return bits;
}

// An address as bytes (4 or 16), for the subnet test.
struct RawAddress {
  std::array<unsigned char, 16> bytes{};
  int length = 0;  // 4 or 16; 0: not an address
};

RawAddress parse_address(const std::string& text) {
  RawAddress raw;
  if (::inet_pton(AF_INET, text.c_str(), raw.bytes.data()) == 1) {
    raw.length = 4;
  } else if (::inet_pton(AF_INET6, text.c_str(), raw.bytes.data()) == 1) {
    raw.length = 16;
  }
  return raw;
}

bool inside(const RawAddress& address, const RawAddress& subnet, int prefix) {
  if (address.length != subnet.length) return false;
  for (int bit = 0; bit < prefix; ++bit) {
    const unsigned char mask = static_cast<unsigned char>(0x80u >> (bit % 8));
    if ((address.bytes[bit / 8] & mask) != (subnet.bytes[bit / 8] & mask)) return false;
  }
  return true;
}

std::string listing(const std::vector<InterfaceAddress>& addresses) {
  if (addresses.empty()) return "this host has no interface that is up with an address";
  std::string out = "this host has";
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    const auto& a = addresses[i];
    out += (i == 0 ? " " : ", ") + a.interface + " " + a.address + "/" + std::to_string(a.prefix_length);
  }
  return out;
}

}  // namespace

std::vector<InterfaceAddress> local_interface_addresses() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    throw std::runtime_error(std::string("getifaddrs: ") + std::strerror(errno) + " (listing this host's interfaces)");
  std::vector<InterfaceAddress> out;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || (entry->ifa_flags & IFF_UP) == 0) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    std::array<char, INET6_ADDRSTRLEN> text{};
    const void* raw =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr)->sin6_addr);
    if (::inet_ntop(family, raw, text.data(), text.size()) == nullptr) continue;
    out.push_back({entry->ifa_name, text.data(), prefix_of(entry->ifa_netmask), family == AF_INET6});
  }
  ::freeifaddrs(list);
  return out;
}

std::string resolve_interface(const std::string& spec) { return resolve_interface(spec, local_interface_addresses()); }

std::string resolve_interface(const std::string& spec, const std::vector<InterfaceAddress>& addresses) {
  if (spec.empty()) throw std::invalid_argument("interface: empty (an interface name such as eth0, or a subnet)");
  const auto slash = spec.find('/');
  if (slash == std::string::npos) {
    const InterfaceAddress* v6 = nullptr;
    for (const auto& a : addresses) {
      if (a.interface != spec) continue;
      if (!a.ipv6) return a.address;
      // A link-local address (fe80::/10) binds only with its scope: skip it.
      if (v6 == nullptr && a.address.rfind("fe80:", 0) != 0) v6 = &a;
    }
    if (v6 != nullptr) return v6->address;
    throw std::invalid_argument("interface '" + spec + "': no such interface with an address that is up; " +
                                listing(addresses));
  }
  const RawAddress subnet = parse_address(spec.substr(0, slash));
  const std::string prefix_text = spec.substr(slash + 1);
  int prefix = -1;
  if (!prefix_text.empty() && prefix_text.size() <= 3 &&
      prefix_text.find_first_not_of("0123456789") == std::string::npos)
    prefix = std::stoi(prefix_text);
  if (subnet.length == 0 || prefix < 0 || prefix > subnet.length * 8)
    throw std::invalid_argument("interface '" + spec +
                                "': not an interface name nor a subnet address/prefix (10.0.0.0/24, fd00::/64)");
  for (const auto& a : addresses) {
    if (inside(parse_address(a.address), subnet, prefix)) return a.address;
  }
  throw std::invalid_argument("interface '" + spec + "': no local address in that subnet; " + listing(addresses));
}

}  // namespace murmur::fabric
