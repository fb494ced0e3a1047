// The libfabric backend within one process: 2-4 transports of one group
// exchange addresses directly (no rendezvous), connect, and move messages.
// Parameterised over the providers tcp and shm; verbs is skipped without an
// RDMA device.
//
// shm and containers: shm moves large messages with CMA (process_vm_readv),
// which needs ptrace permission over the peer process. Within one process
// CMA always works (a process may read itself), so these tests cannot show
// the problem. On the build container there is no yama LSM and the process
// holds CAP_SYS_PTRACE, so CMA works between processes too. Where it does not
// (yama ptrace_scope >= 2; scope 1 is lifted by cross_memory_access.h),
// shm copies through its shared-memory SAR buffers, as FI_SHM_DISABLE_CMA=1
// forces here. With it, AnUnclaimedMessageDoesNotHoldUpAnotherTag fails
// for shm (64 KiB messages: the late tag waits out the timeout; 5 December
// 2026, before and after the doorbell sleeps of that day) and the rest
// passes.
//
// shm in 1.17 refuses FI_WAIT_FD (fi_cq_open: -FI_ENOSYS), so its progress
// thread polls with a sleeping back-off; tcp;ofi_rxm blocks on the CQ fd.
#include "fabric/libfabric/transport.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "fabric/errors.h"
#include "fabric/libfabric/endpoint.h"
#include "fabric/transport_options.h"

namespace murmur::fabric {
namespace {

using namespace std::chrono_literals;

constexpr auto kTimeout = 60s;

std::vector<char> pattern(std::size_t bytes, std::uint32_t seed) {
  std::vector<char> data(bytes);
  std::uint32_t x = seed * 2654435761u + 1;
  for (std::size_t i = 0; i < bytes; ++i) {
    x = x * 1664525u + 1013904223u;
    data[i] = static_cast<char>(x >> 24);
  }
  return data;
}

struct Group {
  std::vector<std::unique_ptr<Transport>> transports;
  Transport& operator[](int r) { return *transports[r]; }
};

Group make_group(const std::string& provider, int size, std::size_t chunk_bytes) {
  Group group;
  std::vector<PeerInfo> peers;
  for (int r = 0; r < size; ++r) {
    TransportOptions options;
    options.provider = provider;
    options.rank = r;
    options.size = size;
    options.peers_on_this_host = true;
    options.chunk_bytes = chunk_bytes;
    group.transports.push_back(libfabric::make_transport(options));
    peers.push_back(PeerInfo{r, "local-" + std::to_string(r), group.transports.back()->address()});
  }
  for (auto& transport : group.transports) transport->connect(peers);
  return group;
}

class LibfabricTransportTest : public ::testing::TestWithParam<std::string> {
 protected:
  Group make(int size, std::size_t chunk_bytes = std::size_t{4} << 20) {
    return make_group(GetParam(), size, chunk_bytes);
  }

  // Sends `bytes` from `from` to `to` and checks every byte.
  static void exchange(Group& group, int from, int to, Tag tag, std::size_t bytes) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    const auto sent = pattern(bytes, static_cast<std::uint32_t>(bytes + tag));
    std::vector<char> received(bytes, 0);
    auto recv = group[to].irecv(from, tag, received.data(), received.size());
    auto send = group[from].isend(to, tag, sent.data(), sent.size());
    ASSERT_TRUE(send->wait_for(kTimeout));
    ASSERT_TRUE(recv->wait_for(kTimeout));
    EXPECT_EQ(recv->bytes(), bytes);
    EXPECT_EQ(send->bytes(), bytes);
    EXPECT_TRUE(received == sent) << "payload differs";
  }
};

TEST_P(LibfabricTransportTest, NameAndAddress) {
  auto group = make(2);
  EXPECT_EQ(group[0].name(), "libfabric:" + GetParam());
  EXPECT_FALSE(group[0].address().empty());
  EXPECT_NE(group[0].address(), group[1].address());
}

TEST_P(LibfabricTransportTest, SizesFromZeroTo64MiB) {
  auto group = make(2);
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20, std::size_t{64} << 20}) {
    exchange(group, 0, 1, 7, bytes);
    exchange(group, 1, 0, 7, bytes);
  }
}

TEST_P(LibfabricTransportTest, ChunkBoundaries) {
  constexpr std::size_t kChunk = 64 << 10;
  auto group = make(2, kChunk);
  for (std::size_t bytes : {kChunk - 1, kChunk, kChunk + 1, 3 * kChunk, 3 * kChunk + 7, std::size_t{1} << 20}) {
    exchange(group, 0, 1, 3, bytes);
  }
}

TEST_P(LibfabricTransportTest, ReceiveCapacityLargerThanMessage) {
  constexpr std::size_t kChunk = 64 << 10;
  auto group = make(2, kChunk);
  const auto sent = pattern(3 * kChunk + 5, 1);
  std::vector<char> received(8 * kChunk, 0);
  auto recv = group[1].irecv(0, 9, received.data(), received.size());
  auto send = group[0].isend(1, 9, sent.data(), sent.size());
  ASSERT_TRUE(send->wait_for(kTimeout));
  ASSERT_TRUE(recv->wait_for(kTimeout));
  ASSERT_EQ(recv->bytes(), sent.size());
  EXPECT_EQ(std::memcmp(received.data(), sent.data(), sent.size()), 0);
}

TEST_P(LibfabricTransportTest, ManyInFlightPerPeerAndTagKeepOrder) {
  constexpr std::size_t kChunk = 16 << 10;
  constexpr int kMessages = 64;
  auto group = make(3, kChunk);
  // Ranks 1 and 2 both send kMessages of varying size (some chunked) to rank
  // 0 on the same two tags; receives are posted first for half of them and
  // after the sends for the rest.
  std::vector<std::vector<char>> sent, received;
  std::vector<RequestPtr> requests;
  std::vector<std::size_t> expected;
  auto size_of = [](int i) { return static_cast<std::size_t>((i * 7919) % (5 * kChunk)); };
  for (int from = 1; from <= 2; ++from) {
    for (int i = 0; i < kMessages; ++i) {
      sent.push_back(pattern(size_of(i), static_cast<std::uint32_t>(from * 1000 + i)));
      received.emplace_back(size_of(i) + 3, 0);
      expected.push_back(size_of(i));
    }
  }
  for (int phase = 0; phase < 2; ++phase) {
    for (int from = 1; from <= 2; ++from) {
      for (int i = 0; i < kMessages; ++i) {
        const std::size_t k = static_cast<std::size_t>((from - 1) * kMessages + i);
        const Tag tag = 100 + static_cast<Tag>(i % 2);
        const bool recv_first = i < kMessages / 2;
        if (phase == (recv_first ? 0 : 1)) {
          requests.push_back(group[0].irecv(from, tag, received[k].data(), received[k].size()));
        }
        if (phase == 0) requests.push_back(group[from].isend(0, tag, sent[k].data(), sent[k].size()));
      }
    }
  }
  ASSERT_TRUE(wait_all(requests, Clock::now() + kTimeout));
  for (std::size_t k = 0; k < sent.size(); ++k) {
    // std::equal, not memcmp: message 0 is empty, and an empty vector's data() is null (UBSan).
    ASSERT_TRUE(std::equal(sent[k].begin(), sent[k].end(), received[k].begin())) << "message " << k;
  }
}

// Tags are independent: messages nobody has asked for yet do not hold up a
// later message on another tag between the same two peers. libfabric
// 1.17's native "net" provider fails this (it keeps at most
// FI_NET_MAX_SAVED = 4 unclaimed messages aside, then stops reading the
// connection; endpoint.cc), which is the other reason it is not "tcp".
TEST_P(LibfabricTransportTest, AnUnclaimedMessageDoesNotHoldUpAnotherTag) {
  auto group = make(2);
  for (std::size_t bytes : {std::size_t{8}, std::size_t{64} << 10, std::size_t{4} << 20}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    // Small ones: more than the receive buffers rxm posts per connection
    // (128, endpoint.cc), which it copies unclaimed messages out of.
    const int kUnclaimed = bytes == 8 ? 200 : 6;
    std::vector<std::vector<char>> early(kUnclaimed, pattern(bytes, 1));
    std::vector<RequestPtr> early_sends;
    for (int i = 0; i < kUnclaimed; ++i) {
      early_sends.push_back(group[0].isend(1, static_cast<Tag>(1000 + i), early[i].data(), bytes));
    }
    const auto late = pattern(bytes, 2);
    auto late_send = group[0].isend(1, 20, late.data(), late.size());
    std::vector<char> got(bytes);
    auto late_recv = group[1].irecv(0, 20, got.data(), got.size());
    ASSERT_TRUE(late_recv->wait_for(kTimeout)) << "the message on tag 20 waited for the unclaimed ones";
    EXPECT_TRUE(got == late);
    for (int i = 0; i < kUnclaimed; ++i) {
      std::vector<char> got_early(bytes);
      ASSERT_TRUE(group[1].irecv(0, static_cast<Tag>(1000 + i), got_early.data(), bytes)->wait_for(kTimeout));
      EXPECT_TRUE(got_early == early[i]);
      EXPECT_TRUE(early_sends[i]->wait_for(kTimeout));
    }
    EXPECT_TRUE(late_send->wait_for(kTimeout));
  }
}

// While a caller drives, the progress thread leaves the CQ to it; once the
// caller stops, a request nobody waits on must still complete: polled with
// test() here, which never drives.
TEST_P(LibfabricTransportTest, ARequestNobodyWaitsOnCompletesAfterACallerStopsDriving) {
  auto group = make(2);
  for (std::size_t bytes : {std::size_t{8}, std::size_t{4} << 20}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    std::vector<char> got(bytes);
    auto unwatched_recv = group[1].irecv(0, 7, got.data(), got.size());
    std::vector<char> ping(8), pong(8);
    for (int i = 0; i < 50; ++i) {  // the callers drive both transports
      auto r1 = group[1].irecv(0, 1, pong.data(), pong.size());
      auto s1 = group[0].isend(1, 1, ping.data(), ping.size());
      ASSERT_TRUE(r1->wait_for(kTimeout));
      auto r2 = group[0].irecv(1, 2, ping.data(), ping.size());
      auto s2 = group[1].isend(0, 2, pong.data(), pong.size());
      ASSERT_TRUE(r2->wait_for(kTimeout));
      ASSERT_TRUE(s1->wait_for(kTimeout) && s2->wait_for(kTimeout));
    }
    const auto message = pattern(bytes, 3);
    auto unwatched_send = group[0].isend(1, 7, message.data(), message.size());
    const auto give_up = std::chrono::steady_clock::now() + kTimeout;
    while (!(unwatched_recv->test() && unwatched_send->test()) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(1ms);  // not a wait: only the progress threads may complete them
    }
    ASSERT_TRUE(unwatched_recv->test()) << "the receive nobody waited on never completed";
    ASSERT_TRUE(unwatched_send->test()) << "the send nobody waited on never completed";
    EXPECT_TRUE(got == message);
  }
}

TEST_P(LibfabricTransportTest, ReceiveTooSmallFailsAndNextMessageArrives) {
  constexpr std::size_t kChunk = 64 << 10;
  auto group = make(2, kChunk);
  for (std::size_t big : {std::size_t{100}, 5 * kChunk + 3}) {
    SCOPED_TRACE("message " + std::to_string(big));
    const auto too_big = pattern(big, 5);
    const auto next = pattern(3 * kChunk + 1, 6);
    std::vector<char> small(big / 2);
    std::vector<char> right(next.size());
    auto recv1 = group[1].irecv(0, 11, small.data(), small.size());
    auto recv2 = group[1].irecv(0, 11, right.data(), right.size());
    auto send1 = group[0].isend(1, 11, too_big.data(), too_big.size());
    auto send2 = group[0].isend(1, 11, next.data(), next.size());
    ASSERT_TRUE(send1->wait_for(kTimeout));
    ASSERT_TRUE(send2->wait_for(kTimeout));
    try {
      recv1->wait_for(kTimeout);
      FAIL() << "a too small receive buffer must fail";
    } catch (const PeerError& e) {
      EXPECT_EQ(e.rank(), 0);
      const std::string what = e.what();
      EXPECT_NE(what.find(std::to_string(big)), std::string::npos) << what;
      EXPECT_NE(what.find(std::to_string(small.size())), std::string::npos) << what;
    }
    ASSERT_TRUE(recv2->wait_for(kTimeout));
    EXPECT_EQ(recv2->bytes(), next.size());
    EXPECT_TRUE(right == next);
  }
}

TEST_P(LibfabricTransportTest, FailPeerFailsPendingAndLaterRequests) {
  auto group = make(3);
  std::vector<char> buffer(1 << 20);
  std::vector<char> other(16);
  auto pending1 = group[0].irecv(1, 1, buffer.data(), buffer.size());
  auto pending2 = group[0].irecv(1, 2, buffer.data(), 16);
  auto unaffected = group[0].irecv(2, 1, other.data(), other.size());
  group[0].fail_peer(1, std::make_exception_ptr(PeerError(1, "local-1", "declared dead")));
  for (auto& request : {pending1, pending2}) {
    try {
      ASSERT_TRUE(request->wait_for(kTimeout));
      FAIL() << "expected PeerError";
    } catch (const PeerError& e) {
      EXPECT_EQ(e.rank(), 1);
      EXPECT_NE(std::string(e.what()).find("declared dead"), std::string::npos);
    }
  }
  auto later = group[0].isend(1, 1, buffer.data(), 8);
  EXPECT_TRUE(later->test());
  EXPECT_THROW(later->wait_for(1s), PeerError);
  // Rank 2 is unaffected.
  EXPECT_FALSE(unaffected->test());
  const auto hello = pattern(16, 2);
  auto send = group[2].isend(0, 1, hello.data(), hello.size());
  ASSERT_TRUE(send->wait_for(kTimeout));
  ASSERT_TRUE(unaffected->wait_for(kTimeout));
  EXPECT_TRUE(other == hello);
}

// The buffer rule (transport.h): a receive failed while its message is
// still arriving from a live sender fails at once, but the backend may
// write its buffer until it lets go of the request. The buffer's owner,
// retained by the request, must live that long (under AddressSanitizer a
// write after the caller's last reference would be a use-after-free), and
// must be freed once the transport is gone (no leak).
TEST_P(LibfabricTransportTest, FailedReceiveKeepsItsRetainedBufferUntilTheBackendLetsGo) {
  constexpr std::size_t kChunk = 64 << 10;
  constexpr std::size_t kBytes = std::size_t{16} << 20;
  auto group = make(2, kChunk);
  exchange(group, 0, 1, 1, 4096);  // connections up
  const auto sent = pattern(kBytes, 9);
  std::weak_ptr<std::vector<char>> watch;
  RequestPtr send;
  {
    auto buffer = std::make_shared<std::vector<char>>(kBytes);
    watch = buffer;
    auto recv = group[1].irecv(0, 2, buffer->data(), buffer->size());
    recv->retain(buffer);
    send = group[0].isend(1, 2, sent.data(), sent.size());
    // Let the message start to arrive, then give up on its sender. Not a
    // wait: either outcome below is checked.
    std::this_thread::sleep_for(2ms);
    group[1].fail_peer(0, std::make_exception_ptr(PeerError(0, "local-0", "declared dead")));
    // Usually the receive fails. shm may have moved all 16 MiB before the
    // failure, though (seen on an idle machine): then the receive is done,
    // whole, with nothing left in flight, and the buffer rule holds
    // trivially. Either way it ends within the timeout.
    bool arrived = false, failed = false;
    try {
      arrived = recv->wait_for(kTimeout);
    } catch (const PeerError&) {
      failed = true;
    }
    EXPECT_TRUE(arrived || failed) << "the receive neither failed nor completed in time";
    if (arrived) {
      EXPECT_TRUE(*buffer == sent);
    }
  }  // the caller's references are gone; the backend's may not be
  // The sender goes on pushing the rest of the message meanwhile (its send
  // may never complete: rank 1 no longer takes it).
  try {
    send->wait_for(2s);
  } catch (const PeerError&) {
  }
  group.transports[1].reset();
  EXPECT_TRUE(watch.expired()) << "the transport kept a retained buffer after it was destroyed";
  group.transports[0].reset();
}

// A message that arrived unexpected from a peer that has since closed its
// endpoint, received afterwards: the receive gets the whole message or
// fails once the peer is declared failed, and nothing crashes. (libfabric
// 1.17's rxm answered such a receive with a rendezvous read on the closed
// connection, a NULL endpoint: SIGSEGV in fi_trecv.)
TEST_P(LibfabricTransportTest, AMessageFromAClosedPeerIsReceivedOrFailsCleanly) {
  if (GetParam() == "shm") {
    // libfabric 1.17's shm crashes inside fi_trecv on the same sequence
    // when both endpoints live in one process (SIGSEGV, no symbols to say
    // where); between processes a closed or killed peer is covered by the
    // multi-process PeerDeath and Failure tests. docs/testing.md.
    GTEST_SKIP() << "libfabric 1.17 shm crashes receiving from an endpoint closed in the same process";
  }
  // A small segmented message, and one of the default chunk size.
  for (std::size_t bytes : {std::size_t{64} << 10, std::size_t{4} << 20}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    auto group = make(2);
    exchange(group, 0, 1, 1, 4096);  // connections up
    const auto sent = pattern(bytes, 3);
    auto send = group[1].isend(0, 5, sent.data(), sent.size());
    // Not waits: the two sleeps make the usual order "message held
    // unexpected, then its sender closed, then the receive posted", which no
    // interface shows; in any other order the receive still gets the whole
    // message or fails, and both are checked.
    std::this_thread::sleep_for(300ms);  // it reaches rank 0, where no receive waits for it
    group.transports[1].reset();
    // Rank 0's progress thread handles the closed connection (its idle
    // wait is 200 ms).
    std::this_thread::sleep_for(600ms);
    std::vector<char> received(sent.size());
    auto recv = group[0].irecv(1, 5, received.data(), received.size());
    if (recv->wait_for(2s)) {
      EXPECT_TRUE(received == sent);
    } else {
      group[0].fail_peer(1, std::make_exception_ptr(PeerError(1, "local-1", "closed")));
      EXPECT_THROW(recv->wait_for(kTimeout), PeerError);
    }
  }
}

// A send that completed is not lost when its sender closes the transport
// right after, even if the receiver posts its receive only later: a peer
// that sends its verdict and exits relies on it. tcp;ofi_rxm keeps the
// unexpected message in its own memory; libfabric 1.17's native "net"
// provider loses it (endpoint.cc), which is one reason it is not "tcp".
TEST_P(LibfabricTransportTest, ACompletedSendSurvivesItsSenderClosingBeforeTheReceiveIsPosted) {
  if (GetParam() == "shm") {
    GTEST_SKIP() << "libfabric 1.17 shm crashes receiving from an endpoint closed in the same process";
  }
  for (std::size_t bytes : {std::size_t{8}, std::size_t{64} << 10, std::size_t{4} << 20}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    auto group = make(2);
    exchange(group, 0, 1, 1, 4096);  // connections up
    const auto sent = pattern(bytes, 9);
    std::vector<char> received(sent.size());
    std::thread sender([&] {
      auto send = group[1].isend(0, 5, sent.data(), sent.size());
      EXPECT_TRUE(send->wait_for(kTimeout));
      group.transports[1].reset();  // closes right after the send completed
    });
    // Not a wait: makes the usual order "sent, then the receive posted".
    std::this_thread::sleep_for(300ms);
    auto recv = group[0].irecv(1, 5, received.data(), received.size());
    EXPECT_TRUE(recv->wait_for(kTimeout));
    sender.join();
    EXPECT_EQ(recv->bytes(), bytes);
    EXPECT_TRUE(received == sent) << "payload differs";
  }
}

TEST_P(LibfabricTransportTest, DestructorFailsPendingRequests) {
  auto group = make(2);
  std::vector<char> buffer(64);
  auto pending = group[0].irecv(1, 1, buffer.data(), buffer.size());
  group.transports[0].reset();
  ASSERT_TRUE(pending->test());
  try {
    std::rethrow_exception(pending->error());
  } catch (const PeerError& e) {
    EXPECT_NE(std::string(e.what()).find("transport closed"), std::string::npos);
  }
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

TEST_P(LibfabricTransportTest, IdleTransportUsesUnderTwoPercentOfACore) {
  auto group = make(2);
  exchange(group, 0, 1, 1, 4096);  // connections up
  // A posted receive keeps the progress thread "in flight", not just idle.
  std::vector<char> buffer(64);
  auto pending = group[1].irecv(0, 2, buffer.data(), buffer.size());
  std::this_thread::sleep_for(100ms);  // not a wait: lets the receive's set-up CPU fall outside the window
  const double before = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(3s);  // not a wait: the idle interval whose CPU time is measured
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The whole process (test thread asleep, two progress threads) per transport.
  const double share = (cpu_seconds() - before) / seconds / 2;
  RecordProperty("idle_cpu_percent_per_transport", std::to_string(share * 100));
  std::printf("idle CPU per transport (%s): %.3f%% of a core\n", GetParam().c_str(), share * 100);
  EXPECT_LT(share, 0.02);
  const char byte = 1;
  auto send = group[0].isend(1, 2, &byte, 1);
  ASSERT_TRUE(pending->wait_for(kTimeout));
}

INSTANTIATE_TEST_SUITE_P(Providers, LibfabricTransportTest, ::testing::Values("tcp", "shm"),
                         [](const auto& info) { return info.param; });

TEST(LibfabricVerbs, ExchangesWhenAnRdmaDeviceIsPresent) {
  if (!libfabric::verbs_available()) GTEST_SKIP() << "no RDMA device: fi_getinfo(verbs) finds none";
  auto group = make_group("verbs", 2, std::size_t{1} << 20);
  const auto sent = pattern(3 << 20, 9);
  std::vector<char> received(sent.size());
  auto recv = group[1].irecv(0, 1, received.data(), received.size());
  auto send = group[0].isend(1, 1, sent.data(), sent.size());
  ASSERT_TRUE(send->wait_for(kTimeout));
  ASSERT_TRUE(recv->wait_for(kTimeout));
  EXPECT_TRUE(received == sent);
}

TEST(LibfabricProviders, UnknownProviderIsAClearError) {
  TransportOptions options;
  options.provider = "carrier-pigeon";
  try {
    libfabric::make_transport(options);
    FAIL() << "expected FabricError";
  } catch (const FabricError& e) {
    EXPECT_NE(std::string(e.what()).find("carrier-pigeon"), std::string::npos);
  }
}

// rxm's settings for tcp (endpoint.cc, tune_rxm_for_tcp) apply wherever tcp
// is what runs, `auto` included: until 3 December a job on one host that
// survives lost peers ran tcp under `auto` without them (rxm's SAR and
// rendezvous for chunks over 16 KiB, and twice the memory per peer). rxm reads them once,
// when libfabric starts, so each case runs in a process of its own.
TEST(LibfabricProviders, AutoTunesRxmWhereverItRunsTcp) {
  if (libfabric::rdma_device_listed()) {
    GTEST_SKIP() << "an RDMA device is listed: auto picks verbs, which keeps rxm's own settings";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  struct Case {
    bool on_this_host, loss_tolerant;
    const char* provider;
  };
  for (const Case c : {Case{true, true, "tcp"}, Case{false, false, "tcp"}, Case{true, false, "shm"}}) {
    SCOPED_TRACE(std::string("peers on this host ") + (c.on_this_host ? "yes" : "no") + ", loss tolerant " +
                 (c.loss_tolerant ? "yes" : "no"));
    EXPECT_EXIT(
        {
          ::unsetenv("FI_OFI_RXM_EAGER_LIMIT");
          ::unsetenv("FI_OFI_RXM_MSG_RX_SIZE");
          ::unsetenv("FI_OFI_RXM_BUFFER_SIZE");
          TransportOptions options;
          options.provider = "auto";
          options.peers_on_this_host = c.on_this_host;
          options.loss_tolerant = c.loss_tolerant;
          options.chunk_bytes = std::size_t{1} << 20;
          const std::string chosen = libfabric::choose_provider(options);
          const char* eager = std::getenv("FI_OFI_RXM_EAGER_LIMIT");
          const char* receives = std::getenv("FI_OFI_RXM_MSG_RX_SIZE");
          const char* buffers = std::getenv("FI_OFI_RXM_BUFFER_SIZE");
          const bool tuned = eager != nullptr && std::string(eager) == "1048576" && receives != nullptr &&
                             std::string(receives) == "128" && buffers != nullptr && std::string(buffers) == "4096";
          const bool untouched = eager == nullptr && receives == nullptr && buffers == nullptr;
          std::fprintf(stderr, "chose %s, eager %s, receives %s, buffers %s\n", chosen.c_str(), eager ? eager : "unset",
                       receives ? receives : "unset", buffers ? buffers : "unset");
          std::exit(chosen == c.provider && (chosen == "tcp" ? tuned : untouched) ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
  }
}

// In a death test's child: opens a tcp transport and exits 3, printing
// the error, when that is refused, else 0.
[[noreturn]] void exit_3_if_tcp_is_refused() {
  TransportOptions options;
  options.provider = "tcp";
  try {
    libfabric::make_transport(options);
  } catch (const FabricError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(3);
  }
  std::exit(0);
}

// FI_TCP_PREFETCH_RBUF_SIZE=0 stalls every tcp message under rxm's dynamic
// receive buffers (endpoint.cc): a clear error naming it, not a hang. Each
// case in a process of its own, as the environment is the process's.
TEST(LibfabricProviders, TcpWithoutThePrefetchBufferIsAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("FI_TCP_PREFETCH_RBUF_SIZE", "0", 1);
        ::unsetenv("FI_OFI_RXM_ENABLE_DYN_RBUF");
        exit_3_if_tcp_is_refused();
      },
      ::testing::ExitedWithCode(3), "FI_TCP_PREFETCH_RBUF_SIZE=0 turns off");
  // With the dynamic receive buffers off too, messages complete: allowed.
  EXPECT_EXIT(
      {
        ::setenv("FI_TCP_PREFETCH_RBUF_SIZE", "0", 1);
        ::setenv("FI_OFI_RXM_ENABLE_DYN_RBUF", "0", 1);
        TransportOptions options;
        options.provider = "tcp";
        std::exit(libfabric::choose_provider(options) == "tcp" ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// libfabric 1.17's "net" on its CQ's wait fd (MURMUR_FABRIC_CQ_WAIT=fd,
// which endpoint.cc does not choose for it) keeps the progress thread
// awake for nothing: its fi_trywait never resets the fd. The thread naps
// (futile_round_backoff.h) instead of spinning (99.7% of a core per
// transport without the naps, docs/fabric-performance.md), and a message
// that comes after the naps still arrives. In a process of its own, as the
// environment is the process's.
TEST(LibfabricProviders, AProviderThatNeverLetsTheProgressThreadSleepCostsUnderTwoPercentOfACore) {
  if (!libfabric::provider_available("net")) GTEST_SKIP() << "fi_getinfo finds no \"net\" provider in this libfabric";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The child closes its transports, then leaves with _Exit: libfabric
  // 1.17's net provider leaks what it allocates for an endpoint (three
  // fi_dupinfo copies and two callocs inside libfabric, even after every
  // fi_close; LeakSanitizer under scripts/check.sh asan, 6 December), and
  // the leak check at exit would fail this test about CPU for it. tcp and
  // shm endpoints leak nothing there.
  const auto measure = [] {
    ::setenv("MURMUR_FABRIC_CQ_WAIT", "fd", 1);
    auto group = make_group("net", 2, std::size_t{4} << 20);
    const char hello = 1;
    char received = 0;
    auto first = group[1].irecv(0, 1, &received, 1);
    if (!group[0].isend(1, 1, &hello, 1)->wait_for(kTimeout) || !first->wait_for(kTimeout)) return 2;
    char second = 0;
    auto pending = group[1].irecv(0, 2, &second, 1);
    const double before = cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(3s);  // not a wait: the interval whose CPU time is measured
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double share = (cpu_seconds() - before) / seconds / 2;
    std::fprintf(stderr, "CPU per transport: %.3f%% of a core\n", share * 100);
    if (!group[0].isend(1, 2, &hello, 1)->wait_for(kTimeout) || !pending->wait_for(kTimeout) || second != hello) {
      return 3;
    }
    return share < 0.02 ? 0 : 1;
  };
  EXPECT_EXIT(std::_Exit(measure()), ::testing::ExitedWithCode(0), "CPU per transport");
}

// A value murmur does not know is an error that names the variable.
TEST(LibfabricProviders, AnUnknownCqWaitIsAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("MURMUR_FABRIC_CQ_WAIT", "spin", 1);
        exit_3_if_tcp_is_refused();
      },
      ::testing::ExitedWithCode(3), "MURMUR_FABRIC_CQ_WAIT='spin' is not one of auto, fd, sread");
}

// Bytes the process's malloc has handed out and not had back, over every
// arena (malloc_info's totals; mallinfo2 reports the main arena only, and
// libfabric allocates on the progress thread's). Under AddressSanitizer
// malloc_info does not see ASan's allocator; LeakSanitizer checks there.
long long heap_in_use() {
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  if (out == nullptr) {
    ADD_FAILURE() << "open_memstream failed: the heap in use cannot be read";
    return 0;
  }
  malloc_info(0, out);
  std::fclose(out);
  const std::string xml(text, size);
  std::free(text);
  // The totals follow the last </heap>.
  const std::size_t at = xml.rfind("</heap>");
  const std::string totals = at == std::string::npos ? xml : xml.substr(at);
  auto field = [&](const char* pattern) {
    std::smatch m;
    return std::regex_search(totals, m, std::regex(pattern)) ? std::stoll(m[1]) : 0LL;
  };
  return field("<system type=\"current\" size=\"([0-9]+)\"") +
         field("<total type=\"mmap\" count=\"[0-9]+\" size=\"([0-9]+)\"") -
         field("<total type=\"fast\" count=\"[0-9]+\" size=\"([0-9]+)\"") -
         field("<total type=\"rest\" count=\"[0-9]+\" size=\"([0-9]+)\"");
}

// A message that arrived before any receive was posted for it, still
// unclaimed when the transport closes. tcp's rxm keeps it in a buffer of its
// own, which libfabric 1.17 frees only when a receive claims it: the engine
// claims and drops such messages before closing (engine_held_messages.cc).
// The heap in use after such a close is compared with that after a close
// where the message was received (the same transports, warmed the same
// way): without the claim it is about 1 MiB more (16 chunks of 64 KiB).
// Under AddressSanitizer LeakSanitizer sees the same at exit.
TEST_P(LibfabricTransportTest, AMessageNobodyReceivedIsFreedWhenTheTransportCloses) {
  constexpr std::size_t kChunk = 64 << 10;
  constexpr std::size_t kBytes = std::size_t{1} << 20;
  const auto sent = pattern(kBytes, 9);
  auto run = [&](bool received) {
    auto group = make(2, kChunk);
    exchange(group, 0, 1, 1, 4096);  // connections up
    auto send = group[0].isend(1, 7, sent.data(), sent.size());
    if (received) {
      std::vector<char> in(kBytes);
      ASSERT_TRUE(group[1].irecv(0, 7, in.data(), in.size())->wait_for(kTimeout));
    }
    // Sent (every chunk handed over) or not, the receiver may hold some.
    // (shm's send completes only once received: unreceived, it waits out
    // the 2 s.)
    try {
      send->wait_for(2s);
    } catch (const PeerError&) {
    }
    // Rank 1's progress thread reads what arrives; give it the chunks. Not
    // a wait for a condition: how many are held when it closes does not
    // matter.
    std::this_thread::sleep_for(200ms);
    group.transports[1].reset();
    group.transports[0].reset();
  };
  run(/*received=*/true);  // libfabric's one-time allocations happen here
  const long long after_received = heap_in_use();
  run(/*received=*/false);
  const long long after_unreceived = heap_in_use();
  EXPECT_LT(after_unreceived - after_received, static_cast<long long>(kBytes / 2))
      << "heap in use after closing with a message nobody received: " << after_unreceived << " bytes, after "
      << "closing with it received: " << after_received;
}

}  // namespace
}  // namespace murmur::fabric
