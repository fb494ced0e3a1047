// Baseline for the fabric benchmarks: what plain blocking POSIX TCP does on
// loopback on this machine, measured in the same process as the backend under
// test (these two-core machines are too noisy to compare across runs).
//
// Both functions open a listening socket on 127.0.0.1 (ephemeral port), run
// the peer on a second thread, set TCP_NODELAY on both ends, and block until
// the measurement is done. They throw std::runtime_error naming the failing
// call if a socket call fails. Not thread-safe with respect to the CPU they
// measure: run one at a time.
#pragma once

#include <cstddef>

namespace murmur::bench {

// One-way bandwidth in MB/s (1e6 bytes/s): one thread writes `total_bytes`
// in writes of `message_bytes`, the other reads them all; timed from the first
// write to the last byte read.
double loopback_tcp_bandwidth_mbps(std::size_t message_bytes, std::size_t total_bytes);

// Median round-trip time in microseconds of a ping-pong of `message_bytes`
// each way, over `iterations` round trips (after a few warm-up ones).
double loopback_tcp_rtt_us(std::size_t message_bytes, int iterations);

}  // namespace murmur::bench
