// fabric_bench: one-way bandwidth and small-message round-trip latency of
// each fabric backend, next to plain loopback TCP (blocking POSIX sockets)
// measured in the same run, so that the ratio is meaningful on a noisy,
// shared machine. Prints medians over --reps repetitions; the ratio column
// is the median of per-repetition ratios (each pair run back to back).
//
//   fabric_bench [--sizes 4096,65536,1048576,4194304] [--reps 7] [--mib 256]
//                [--spin-us 50] [--no-bandwidth] [--idle-seconds 2]
//   fabric_bench --no-bandwidth --backends libfabric:tcp@0,libfabric:tcp@50  (spins side by side)
//   fabric_bench --gathered   (also a compressed message's pieces: isendv against packing them first)
//
// After the round trips, the CPU the pair of transports burns while idle
// (nothing posted) and while waiting (a receive posted that nothing
// matches, as a gossip neighbour's), in % of one core per transport.
#include <sys/resource.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/fabric/loopback_tcp_baseline.h"
#include "fabric/errors.h"
#include "fabric/transport_options.h"

namespace {

using murmur::fabric::Clock;
using murmur::fabric::RequestPtr;
using murmur::fabric::Tag;
using murmur::fabric::Transport;

struct Pair {
  std::unique_ptr<Transport> a, b;
};

Pair connect_pair(const std::string& backend, const std::string& provider, std::size_t chunk_bytes,
                  std::chrono::microseconds max_spin) {
  murmur::fabric::TransportOptions o;
  o.max_spin = max_spin;
  o.chunk_bytes = chunk_bytes;
  o.backend = backend;
  o.provider = provider;
  o.size = 2;
  o.peers_on_this_host = true;
  o.bind_host = "127.0.0.1";
  Pair p;
  o.rank = 0;
  p.a = murmur::fabric::make_transport(o);
  o.rank = 1;
  p.b = murmur::fabric::make_transport(o);
  std::vector<murmur::fabric::PeerInfo> peers = {{0, "localhost", p.a->address()}, {1, "localhost", p.b->address()}};
  // connect() may wait for the other side, so both run at once.
  std::thread t([&] { p.b->connect(peers); });
  p.a->connect(peers);
  t.join();
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// How each message of one_way_mbps leaves the sender.
enum class SendAs {
  kContiguous,  // isend of one buffer
  kGathered,    // isendv of a compressed message's three pieces (below)
  kPacked,      // the same three pieces copied into one buffer, then isend
};

// A sparse compressed message's layout: an 8-byte header, an index (a
// quarter of the values' bytes, as delta-varint indices take at ratios
// near 1%) and the values, each in a buffer of its own.
struct MessagePieces {
  explicit MessagePieces(std::size_t size) {
    const std::size_t header_bytes = std::min<std::size_t>(8, size);
    const std::size_t index_bytes = (size - header_bytes) / 5;
    header.assign(header_bytes, 0xab);
    index.assign(index_bytes, 0xab);
    values.assign(size - header_bytes - index_bytes, 0xab);
  }
  murmur::fabric::SendPieces pieces() const {
    return {murmur::fabric::as_piece(header), murmur::fabric::as_piece(index), murmur::fabric::as_piece(values)};
  }
  void pack(std::uint8_t* out) const {
    std::memcpy(out, header.data(), header.size());
    std::memcpy(out + header.size(), index.data(), index.size());
    std::memcpy(out + header.size() + index.size(), values.data(), values.size());
  }
  std::vector<std::uint8_t> header, index, values;
};

// Streams `total` bytes from a to b in messages of `size`, with up to
// `window` messages in flight, message i on tag 1 + i mod `tags`; returns
// MB/s (1e6 bytes per second).
double one_way_mbps(Pair& p, std::size_t size, std::size_t total, int window, int tags,
                    SendAs send_as = SendAs::kContiguous) {
  std::size_t count = std::max<std::size_t>(1, total / size);
  std::vector<std::uint8_t> src(send_as == SendAs::kPacked ? size * window : size, 0xab), dst(size * window);
  const MessagePieces pieces(send_as == SendAs::kContiguous ? 0 : size);
  std::vector<RequestPtr> sends, recvs;
  auto start = Clock::now();
  std::size_t posted = 0, done = 0;
  std::deque<std::pair<RequestPtr, RequestPtr>> inflight;
  while (done < count) {
    while (posted < count && inflight.size() < static_cast<std::size_t>(window)) {
      auto slot = (posted % window) * size;
      const Tag tag = 1 + posted % static_cast<std::size_t>(tags);
      auto r = p.b->irecv(0, tag, dst.data() + slot, size);
      RequestPtr s;
      switch (send_as) {
        case SendAs::kContiguous:
          s = p.a->isend(1, tag, src.data(), size);
          break;
        case SendAs::kGathered:
          s = p.a->isendv(1, tag, pieces.pieces());
          break;
        case SendAs::kPacked:
          // The slot's previous send is done: the window waits in order.
          pieces.pack(src.data() + slot);
          s = p.a->isend(1, tag, src.data() + slot, size);
          break;
      }
      inflight.emplace_back(r, s);
      ++posted;
    }
    auto [r, s] = inflight.front();
    inflight.pop_front();
    r->wait_until(Clock::now() + std::chrono::seconds(60));
    s->wait_until(Clock::now() + std::chrono::seconds(60));
    ++done;
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (dst[0] != 0xab || dst[size - 1] != 0xab) throw std::runtime_error("payload corrupted");
  return count * size / seconds / 1e6;
}

// Ping-pong of `size` bytes; returns the median round trip in microseconds.
double round_trip_us(Pair& p, std::size_t size, int iterations) {
  std::vector<std::uint8_t> a(size, 1), b(size);
  std::vector<double> samples;
  for (int i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    auto r1 = p.b->irecv(0, 2, b.data(), size);
    auto s1 = p.a->isend(1, 2, a.data(), size);
    r1->wait_until(Clock::now() + std::chrono::seconds(10));
    auto r2 = p.a->irecv(1, 3, a.data(), size);
    auto s2 = p.b->isend(0, 3, b.data(), size);
    r2->wait_until(Clock::now() + std::chrono::seconds(10));
    s1->wait_until(Clock::now() + std::chrono::seconds(10));
    s2->wait_until(Clock::now() + std::chrono::seconds(10));
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return median(samples);
}

double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// % of one core each of the two transports uses over `seconds`, the main
// thread asleep. `waiting`: a receive is posted that no send matches.
double idle_cpu_percent(Pair& p, double seconds, bool waiting) {
  std::uint8_t byte = 0;
  RequestPtr pending;
  if (waiting) pending = p.b->irecv(0, 99, &byte, 1);
  const double cpu = process_cpu_seconds();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double used = (process_cpu_seconds() - cpu) / wall / 2 * 100;
  if (pending) {
    // Completes it, so that the pair can be closed cleanly.
    auto s = p.a->isend(1, 99, &byte, 1);
    pending->wait_until(Clock::now() + std::chrono::seconds(10));
    s->wait_until(Clock::now() + std::chrono::seconds(10));
  }
  return used;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabric_bench: fabric backends against plain loopback TCP"};
  std::vector<std::size_t> sizes = {4096, 65536, 1 << 20, 4 << 20};
  int reps = 7;
  double mib = 256;
  int window = 8;
  int tags = 1;
  std::size_t chunk_bytes = murmur::fabric::TransportOptions{}.chunk_bytes;
  std::vector<std::string> backends = {"libfabric:tcp", "libfabric:shm", "asio"};
  long spin_us = murmur::fabric::TransportOptions{}.max_spin.count();
  bool no_bandwidth = false;
  bool gathered = false;
  double idle_seconds = 2;
  auto baseline_reader = murmur::bench::SocketReader::kMarked;
  app.add_option("--sizes", sizes, "message sizes in bytes")->delimiter(',')->capture_default_str();
  app.add_option("--reps", reps, "repetitions (medians are reported)")->capture_default_str();
  app.add_option("--mib", mib, "MiB streamed per bandwidth repetition")->capture_default_str();
  app.add_option("--window", window, "messages in flight")->capture_default_str();
  app.add_option("--tags", tags, "spread the messages in flight over this many tags (1: one stream)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--chunk-bytes", chunk_bytes, "the transports' chunk size")->capture_default_str();
  app.add_option("--backends", backends, "backends to measure: backend[:provider][@spin-us]")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--spin-us", spin_us, "libfabric progress threads' most polling before blocking (0: none)")
      ->check(CLI::Range(0L, 10000L))
      ->capture_default_str();
  app.add_flag("--no-bandwidth", no_bandwidth, "round trips and idle CPU only");
  app.add_flag("--gathered", gathered,
               "also send each size as a sparse message's three pieces: gathered (isendv) and packed into one "
               "buffer first, each against the contiguous send of the same repetition");
  app.add_option("--idle-seconds", idle_seconds, "seconds of each idle-CPU measurement (0: none)")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  app.add_option("--baseline-reader", baseline_reader,
                 "the socket baseline's reader: marked (poll, woken per MiB) or blocking (recv, woken per segment)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, murmur::bench::SocketReader>{
          {"marked", murmur::bench::SocketReader::kMarked}, {"blocking", murmur::bench::SocketReader::kBlocking}}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (no_bandwidth) sizes.clear();
  std::printf("libfabric spin: up to %ld us; socket baseline reader: %s\n", spin_us,
              murmur::bench::socket_reader_name(baseline_reader));
  const auto total = static_cast<std::size_t>(mib * (1 << 20));

  std::printf("%-16s %10s %12s %12s %8s\n", "backend", "bytes", "MB/s", "tcp MB/s", "ratio");
  for (const auto& name : backends) {
    // "libfabric:tcp@0": this entry's spin instead of --spin-us, so that
    // one run compares spins side by side, each against its own baseline.
    const auto at = name.find('@');
    const auto spec = name.substr(0, at);
    long spin = spin_us;
    if (at != std::string::npos) {
      try {
        spin = std::stol(name.substr(at + 1));
      } catch (const std::exception&) {
        std::fprintf(stderr, "fabric_bench: --backends entry '%s': expected backend[:provider][@spin-us]\n",
                     name.c_str());
        return 2;
      }
    }
    auto colon = spec.find(':');
    auto backend = spec.substr(0, colon);
    auto provider = colon == std::string::npos ? "auto" : spec.substr(colon + 1);
    Pair pair;
    try {
      pair = connect_pair(backend, provider, chunk_bytes, std::chrono::microseconds(spin));
    } catch (const std::exception& e) {
      std::printf("%-16s skipped: %s\n", name.c_str(), e.what());
      continue;
    }
    for (auto size : sizes) {
      std::vector<double> ours, base, ratio;
      for (int r = 0; r < reps; ++r) {
        // Interleaved so that both see the same background load; the ratio
        // is taken per pair of runs, then its median.
        ours.push_back(one_way_mbps(pair, size, total, window, tags));
        base.push_back(murmur::bench::loopback_tcp_bandwidth_mbps(size, total, baseline_reader));
        ratio.push_back(ours.back() / base.back());
      }
      std::printf("%-16s %10zu %12.0f %12.0f %8.2f\n", name.c_str(), size, median(ours), median(base), median(ratio));
      std::fflush(stdout);
      if (!gathered) continue;
      std::vector<double> plain, gather, packed, gather_ratio, packed_ratio, gather_over_packed;
      for (int r = 0; r < reps; ++r) {
        plain.push_back(one_way_mbps(pair, size, total, window, tags, SendAs::kContiguous));
        gather.push_back(one_way_mbps(pair, size, total, window, tags, SendAs::kGathered));
        packed.push_back(one_way_mbps(pair, size, total, window, tags, SendAs::kPacked));
        gather_ratio.push_back(gather.back() / plain.back());
        packed_ratio.push_back(packed.back() / plain.back());
        gather_over_packed.push_back(gather.back() / packed.back());
      }
      std::printf(
          "%-16s %10zu gathered %.0f, packed %.0f, contiguous %.0f MB/s; of contiguous: gathered %.2f, "
          "packed %.2f; gathered/packed %.2f\n",
          name.c_str(), size, median(gather), median(packed), median(plain), median(gather_ratio), median(packed_ratio),
          median(gather_over_packed));
      std::fflush(stdout);
    }
    std::vector<double> rtt, base_rtt, rtt_ratio;
    for (int r = 0; r < reps; ++r) {
      rtt.push_back(round_trip_us(pair, 8, 1000));
      base_rtt.push_back(murmur::bench::loopback_tcp_rtt_us(8, 1000));
      rtt_ratio.push_back(rtt.back() / base_rtt.back());
    }
    std::printf("%-16s %10s %9.1f us %9.1f us %8.2f   (8-byte round trip)\n", name.c_str(), "rtt", median(rtt),
                median(base_rtt), median(rtt_ratio));
    if (idle_seconds > 0) {
      const double idle = idle_cpu_percent(pair, idle_seconds, false);
      const double waiting = idle_cpu_percent(pair, idle_seconds, true);
      std::printf("%-16s %10s %8.2f %% idle, %.2f %% waiting on a receive (of one core, per transport, %.0f s)\n",
                  name.c_str(), "cpu", idle, waiting, idle_seconds);
    }
    std::fflush(stdout);
  }
  if (const long stalls = murmur::bench::socket_reader_timed_out_waits(); stalls > 0) {
    std::printf(
        "socket baseline: %ld marked waits ran out their 10 ms (a mark not honoured or a stalled sender): "
        "its figures are low\n",
        stalls);
  }
  return 0;
}
