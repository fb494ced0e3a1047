// Doorbell (libfabric/doorbell.h): the futex word that wakes an shm
// endpoint's progress thread. Names read from untrusted addresses, rings
// that wake a waiter at once (another mapping of the object, as another
// process has), waits that end at their timeout, and the object's life.
#include "fabric/libfabric/doorbell.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <random>
#include <string>

#include "common/host.h"

namespace murmur::fabric::libfabric {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A region name of this process, as endpoint.cc makes them.
std::string fresh_region() {
  std::random_device random;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08x%08x", random(), random());
  return shm_region_prefix(static_cast<int>(::getpid())) + hex;
}

TEST(Doorbell, FindsOnlyARegionNameOfItsOwnFormInAnAddress) {
  EXPECT_EQ(Doorbell::region_in("murmur-42-0123456789abcdef"), "murmur-42-0123456789abcdef");
  EXPECT_EQ(Doorbell::region_in(std::string("fi_shm://\0murmur-7-00000000deadbeef\0", 35)),
            "murmur-7-00000000deadbeef");
  EXPECT_EQ(Doorbell::region_in("xmurmur-1-zz murmur-9-0123456789ABCDEF/.."), "murmur-9-0123456789ABCDEF");
  for (const std::string bad :
       {"", "murmur-", "murmur--0123456789abcdef", "murmur-1-0123456789abcde", "murmur-1x0123456789abcdef",
        "murmur-12345678901-0123456789abcdef", "../etc/murmur-1-0123456789abcdeg", "murmur-1-/0123456789abcdef"})
    EXPECT_EQ(Doorbell::region_in(bad), std::nullopt) << bad;
}

TEST(Doorbell, ARingWakesAWaiterAtOnce) {
  const std::string region = fresh_region();
  auto own = Doorbell::create(region);
  auto peer = Doorbell::open(region);  // another mapping, as another process's
  ASSERT_NE(peer, nullptr);
  const std::uint32_t seen = own->value();
  const auto start = Clock::now();
  auto waiting = std::async(std::launch::async, [&] { own->wait(seen, std::chrono::microseconds(30s)); });
  std::this_thread::sleep_for(50ms);  // the stimulus: ring while it sleeps
  peer->ring();
  ASSERT_EQ(waiting.wait_for(20s), std::future_status::ready) << "the ring did not wake the waiter";
  EXPECT_LT(Clock::now() - start, 20s);
  EXPECT_EQ(own->value(), seen + 1);
  // A ring that came before the wait (the value moved on) ends it at once.
  const auto again = Clock::now();
  own->wait(seen, std::chrono::microseconds(30s));
  EXPECT_LT(Clock::now() - again, 20s);
}

TEST(Doorbell, AWaitWithoutARingEndsAtItsTimeout) {
  auto own = Doorbell::create(fresh_region());
  const auto start = Clock::now();
  own->wait(own->value(), std::chrono::microseconds(20ms));
  EXPECT_GE(Clock::now() - start, 15ms);
}

TEST(Doorbell, OpensNothingThatIsNotADoorbellAndGoesWithItsOwner) {
  EXPECT_EQ(Doorbell::open(fresh_region()), nullptr);  // none made
  // An object of another size under a doorbell's name is not one.
  const std::string region = fresh_region();
  const std::string path = "/" + region + ".bell";
  const int fd = ::shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ::close(fd);
  EXPECT_EQ(Doorbell::open(region), nullptr);
  ::shm_unlink(path.c_str());
  // The owner unlinks its object; a mapping opened before stays usable.
  const std::string owned = fresh_region();
  auto own = Doorbell::create(owned);
  auto peer = Doorbell::open(owned);
  ASSERT_NE(peer, nullptr);
  own.reset();
  EXPECT_EQ(Doorbell::open(owned), nullptr);
  peer->ring();
  EXPECT_EQ(peer->value(), 1u);
}

}  // namespace
}  // namespace murmur::fabric::libfabric
