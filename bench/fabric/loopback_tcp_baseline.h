// Baseline for the fabric benchmarks: what plain POSIX TCP does on
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

// How the bandwidth baseline's reader waits for a message's bytes.
enum class SocketReader {
  // recv() blocks until any byte is there (low-water mark 1): several
  // wake-ups per MiB at loopback speed.
  kBlocking,
  // poll() with SO_RCVLOWAT set to what the message still owes, at most a
  // MiB, then a non-blocking recv(): one wake-up per MiB, as murmur's asio
  // reader does. Each wait is bounded (10 ms), so a mark the kernel does
  // not honour slows a run down instead of hanging it.
  kMarked,
};

const char* socket_reader_name(SocketReader reader);

// Marked waits that ran out their bound in this process so far: each a
// mark the kernel did not honour or a sender held off a core for 10 ms;
// either way a run with any reads slow.
long socket_reader_timed_out_waits();

// One-way bandwidth in MB/s (1e6 bytes/s): one thread writes `total_bytes`
// in writes of `message_bytes`, the other reads them all; timed from the first
// write to the last byte read.
double loopback_tcp_bandwidth_mbps(std::size_t message_bytes, std::size_t total_bytes,
                                   SocketReader reader = SocketReader::kMarked);

// Median round-trip time in microseconds of a ping-pong of `message_bytes`
// each way, over `iterations` round trips (after a few warm-up ones).
double loopback_tcp_rtt_us(std::size_t message_bytes, int iterations);

}  // namespace murmur::bench
