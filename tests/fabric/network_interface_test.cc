// resolve_interface: choosing the data plane's address by interface name or
// subnet, on a list given by the test and on this host's own.
#include "fabric/network_interface.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace murmur::fabric {
namespace {

const std::vector<InterfaceAddress> kHost = {
    {"lo", "127.0.0.1", 8, false},   {"lo", "::1", 128, true},         {"eth0", "fe80::1", 64, true},
    {"eth0", "fd00::2", 64, true},   {"eth0", "192.0.2.2", 24, false}, {"ib0", "fe80::5", 64, true},
    {"ib0", "10.77.0.3", 16, false},
};

std::string refusal(const std::string& spec) {
  try {
    resolve_interface(spec, kHost);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << spec << "' was accepted";
  return "";
}

TEST(NetworkInterface, ANameGivesItsIpv4AddressBeforeIpv6) {
  EXPECT_EQ(resolve_interface("eth0", kHost), "192.0.2.2");
  EXPECT_EQ(resolve_interface("ib0", kHost), "10.77.0.3");
  EXPECT_EQ(resolve_interface("lo", kHost), "127.0.0.1");
}

TEST(NetworkInterface, AnInterfaceWithOnlyIpv6GivesOneThatBindsWithoutAScope) {
  const std::vector<InterfaceAddress> v6 = {{"eth1", "fe80::9", 64, true}, {"eth1", "fd00::9", 64, true}};
  EXPECT_EQ(resolve_interface("eth1", v6), "fd00::9");
  EXPECT_NE(refusal("nope0").find("no such interface"), std::string::npos);
  try {
    resolve_interface("eth1", {{"eth1", "fe80::9", 64, true}});
    ADD_FAILURE() << "a link-local address alone was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("eth1 fe80::9/64"), std::string::npos) << e.what();
  }
}

TEST(NetworkInterface, ASubnetGivesTheLocalAddressInsideIt) {
  EXPECT_EQ(resolve_interface("10.77.0.0/16", kHost), "10.77.0.3");
  EXPECT_EQ(resolve_interface("10.77.255.255/16", kHost), "10.77.0.3");  // host bits are ignored
  EXPECT_EQ(resolve_interface("192.0.2.0/24", kHost), "192.0.2.2");
  EXPECT_EQ(resolve_interface("fd00::/8", kHost), "fd00::2");
  EXPECT_EQ(resolve_interface("0.0.0.0/0", kHost), "127.0.0.1");  // every IPv4 address: the first
}

TEST(NetworkInterface, RefusalsNameTheSpecAndListTheHostsInterfaces) {
  const std::string missing = refusal("eth9");
  EXPECT_NE(missing.find("interface 'eth9': no such interface"), std::string::npos) << missing;
  EXPECT_NE(missing.find("eth0 192.0.2.2/24"), std::string::npos) << missing;
  EXPECT_NE(missing.find("ib0 10.77.0.3/16"), std::string::npos) << missing;
  EXPECT_NE(refusal("10.1.0.0/16").find("no local address in that subnet"), std::string::npos);
  for (const char* malformed : {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "300.1.1.1/8", "/8", "fd00::/129"})
    EXPECT_NE(refusal(malformed).find("not an interface name nor a subnet"), std::string::npos) << malformed;
  EXPECT_NE(refusal("").find("empty"), std::string::npos);
}

TEST(NetworkInterface, ThisHostsLoopbackIsFoundByNameAndBySubnet) {
  bool has_lo = false;
  for (const auto& a : local_interface_addresses()) has_lo = has_lo || (a.interface == "lo" && !a.ipv6);
  if (!has_lo) GTEST_SKIP() << "this host lists no IPv4 loopback interface named lo";
  EXPECT_EQ(resolve_interface("lo"), "127.0.0.1");
  EXPECT_EQ(resolve_interface("127.0.0.0/8"), "127.0.0.1");
}

}  // namespace
}  // namespace murmur::fabric
