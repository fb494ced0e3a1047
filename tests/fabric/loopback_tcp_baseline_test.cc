// The socket baseline fabric_bench measures every backend against
// (bench/fabric/loopback_tcp_baseline.h): both of its readers deliver every
// message, whatever its size against the reader's MiB mark, byte for byte
// (the function compares the last message with what was sent and throws
// where they differ), and end. A
// reader whose mark asked for bytes that never come would hang here (the
// test's timeout), as the first marked reader did (docs/fabric-performance.md).
#include "bench/fabric/loopback_tcp_baseline.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace murmur::bench {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

class LoopbackTcpBaselineTest : public ::testing::TestWithParam<SocketReader> {};

TEST_P(LoopbackTcpBaselineTest, DeliversMessagesSmallerThanLargerThanAndUnalignedToTheMark) {
  // 1 byte, under a segment, exactly the mark, a mark and a half and 3
  // bytes (the last read's mark is what is left), and four marks.
  for (const std::size_t bytes : {std::size_t{1}, std::size_t{4096}, kMiB, kMiB + kMiB / 2 + 3, 4 * kMiB}) {
    SCOPED_TRACE(::testing::Message() << bytes << "-byte messages, " << socket_reader_name(GetParam()));
    double mbps = 0;
    EXPECT_NO_THROW(mbps = loopback_tcp_bandwidth_mbps(bytes, 8 * bytes, GetParam()));
    EXPECT_GT(mbps, 0);
  }
}

TEST(LoopbackTcpBaselineTest, RefusesEmptyMessages) {
  EXPECT_THROW(loopback_tcp_bandwidth_mbps(0, kMiB), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Readers, LoopbackTcpBaselineTest,
                         ::testing::Values(SocketReader::kMarked, SocketReader::kBlocking),
                         [](const ::testing::TestParamInfo<SocketReader>& info) {
                           return std::string(socket_reader_name(info.param));
                         });

}  // namespace
}  // namespace murmur::bench
