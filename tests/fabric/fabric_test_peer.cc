// One peer of the multi-process fabric tests (tests/fabric/multiprocess_*).
// It joins the group through the rendezvous, then runs one mode:
//   exchange: every rank sends `--bytes` to its partners (all others when the
//             message is at most 1 MiB, else its ring neighbours) for
//             `--rounds` rounds and checks every byte it receives.
//   soak:     exchanges 64 KiB messages with every other rank until a peer is
//             lost, then prints one "lost peer ..." line per failure and exits 0.
//   transfer: rank 0 sends `--bytes` to rank 1 once; rank 1 prints how long it
//             took from the common barrier to the last byte.
// Exit status: 0 on success, 1 on a failed check or error (message on stderr).
#include <CLI/CLI.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <vector>

#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/group.h"

namespace {

using murmur::fabric::Clock;
using murmur::fabric::RequestPtr;

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The payload rank `src` sends to `dst` in `round`: distinct for every
// (src, dst, round, offset), so a misplaced chunk cannot go unnoticed.
void fill(std::vector<std::uint8_t>& buf, int src, int dst, int round) {
  std::uint64_t seed = splitmix((std::uint64_t(src) << 40) ^ (std::uint64_t(dst) << 20) ^ std::uint64_t(round));
  std::size_t words = buf.size() / 8;
  auto* p = buf.data();
  for (std::size_t k = 0; k < words; ++k) {
    std::uint64_t v = splitmix(seed + k);
    std::memcpy(p + 8 * k, &v, 8);
  }
  for (std::size_t i = words * 8; i < buf.size(); ++i) p[i] = static_cast<std::uint8_t>(splitmix(seed + i) & 0xff);
}

// Returns the first differing offset, or -1.
long long first_mismatch(const std::vector<std::uint8_t>& got, int src, int dst, int round) {
  std::vector<std::uint8_t> want(got.size());
  fill(want, src, dst, round);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) return static_cast<long long>(i);
  }
  return -1;
}

std::vector<int> partners(int rank, int size, std::size_t bytes) {
  std::set<int> out;
  if (bytes <= (std::size_t{1} << 20)) {
    for (int r = 0; r < size; ++r)
      if (r != rank) out.insert(r);
  } else if (size > 1) {
    out.insert((rank + 1) % size);
    out.insert((rank + size - 1) % size);
  }
  return {out.begin(), out.end()};
}

int run_exchange(murmur::fabric::Group& group, std::size_t bytes, int rounds) {
  auto& t = group.transport();
  auto peers = partners(group.rank(), group.size(), bytes);
  std::size_t verified = 0;
  for (int round = 0; round < rounds; ++round) {
    // Owned by the requests too (transport.h, buffer rule): a round that
    // times out returns while the transport may still use them.
    auto buffers = std::make_shared<std::vector<std::vector<std::uint8_t>>>(2 * peers.size());
    std::span<std::vector<std::uint8_t>> in(buffers->data(), peers.size());
    std::span<std::vector<std::uint8_t>> out(buffers->data() + peers.size(), peers.size());
    std::vector<RequestPtr> requests;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      // Capacity one byte larger than needed: the size the receive reports
      // must be the size that was sent, not the buffer's.
      in[i].resize(bytes + 1);
      requests.push_back(t.irecv(peers[i], /*tag=*/round, in[i].data(), in[i].size()));
      requests.back()->retain(buffers);
    }
    for (std::size_t i = 0; i < peers.size(); ++i) {
      out[i].resize(bytes);
      fill(out[i], group.rank(), peers[i], round);
      requests.push_back(t.isend(peers[i], /*tag=*/round, out[i].data(), bytes));
      requests.back()->retain(buffers);
    }
    if (!murmur::fabric::wait_all(requests, Clock::now() + std::chrono::seconds(240))) {
      std::cerr << "rank " << group.rank() << ": round " << round << " timed out\n";
      return 1;
    }
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (requests[i]->bytes() != bytes) {
        std::cerr << "rank " << group.rank() << ": from rank " << peers[i] << " got " << requests[i]->bytes()
                  << " bytes, expected " << bytes << "\n";
        return 1;
      }
      in[i].resize(bytes);
      if (auto at = first_mismatch(in[i], peers[i], group.rank(), round); at >= 0) {
        std::cerr << "rank " << group.rank() << ": from rank " << peers[i] << " byte " << at << " of " << bytes
                  << " differs in round " << round << "\n";
        return 1;
      }
      verified += bytes;
    }
  }
  group.barrier("test/exchange-done", std::chrono::seconds(120));
  std::cout << "ok rank=" << group.rank() << " partners=" << peers.size() << " bytes_verified=" << verified
            << std::endl;
  return 0;
}

// Waits until every request of a round is done or any has failed, the way
// a trainer abandons a round once a link fails. Returns true if one failed.
bool round_failed(const std::vector<RequestPtr>& requests, Clock::time_point deadline) {
  struct Progress {
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t done = 0;
    bool failed = false;
  };
  auto progress = std::make_shared<Progress>();
  for (const auto& r : requests) {
    r->on_done([progress](murmur::fabric::Request& done) {
      std::lock_guard<std::mutex> lock(progress->mutex);
      ++progress->done;
      if (done.error()) progress->failed = true;
      progress->cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(progress->mutex);
  if (!progress->cv.wait_until(lock, deadline, [&] { return progress->failed || progress->done == requests.size(); })) {
    throw std::runtime_error("round did not finish before its deadline");
  }
  return progress->failed;
}

// Exchanges with every other rank until a link fails, then asks the control
// plane which peer the job lost (a failed link may be a survivor that left
// first) and prints one "lost peer rank R (host): reason" line for each.
int run_soak(murmur::fabric::Group& group) {
  auto& t = group.transport();
  const std::size_t bytes = 64 << 10;
  auto peers = partners(group.rank(), group.size(), bytes);
  // A round is abandoned at its first failure, with other requests still
  // pending: the requests own the buffers (transport.h, buffer rule).
  auto in = std::make_shared<std::vector<std::vector<std::uint8_t>>>(peers.size(), std::vector<std::uint8_t>(bytes));
  auto out = std::make_shared<std::vector<std::uint8_t>>(bytes, 0x5a);
  auto give_up = Clock::now() + std::chrono::seconds(60);
  for (int round = 0; Clock::now() < give_up; ++round) {
    std::vector<RequestPtr> requests;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      requests.push_back(t.irecv(peers[i], round, (*in)[i].data(), bytes));
      requests.back()->retain(in);
    }
    for (int p : peers) {
      requests.push_back(t.isend(p, round, out->data(), bytes));
      requests.back()->retain(out);
    }
    bool failed = round_failed(requests, Clock::now() + std::chrono::seconds(30));
    if (round == 0) std::cout << "ready rank=" << group.rank() << std::endl;
    if (failed) {
      auto lost = group.wait_for_lost_peers(Clock::now() + std::chrono::seconds(30));
      if (lost.empty()) {
        std::cerr << "rank " << group.rank() << ": a link failed but no peer was declared lost\n";
        return 1;
      }
      for (const auto& l : lost)
        std::cout << "lost peer rank " << l.rank << " (" << l.host << "): " << l.reason << std::endl;
      return 0;
    }
  }
  std::cerr << "rank " << group.rank() << ": no peer was lost within 60 s\n";
  return 3;
}

int run_transfer(murmur::fabric::Group& group, std::size_t bytes) {
  auto& t = group.transport();
  std::vector<std::uint8_t> buf(bytes);
  RequestPtr request;
  if (group.rank() == 1) request = t.irecv(0, 0, buf.data(), bytes);
  if (group.rank() == 0) fill(buf, 0, 1, 0);
  group.barrier("test/transfer-start", std::chrono::seconds(60));
  auto start = Clock::now();
  if (group.rank() == 0) request = t.isend(1, 0, buf.data(), bytes);
  if (request) request->wait_until(Clock::now() + std::chrono::seconds(120));
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (group.rank() == 1) {
    if (first_mismatch(buf, 0, 1, 0) >= 0) {
      std::cerr << "rank 1: transfer corrupted\n";
      return 1;
    }
    std::cout << "transfer_seconds=" << seconds << std::endl;
  }
  group.barrier("test/transfer-done", std::chrono::seconds(60));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"murmur fabric test peer"};
  murmur::fabric::GroupOptions options;
  std::string mode = "exchange";
  std::size_t bytes = 4096;
  int rounds = 2;
  app.add_option("--rank", options.rank)->required();
  app.add_option("--size", options.size)->required();
  app.add_option("--rendezvous-port", options.rendezvous_port)->required();
  app.add_option("--token", options.token);
  app.add_option("--backend", options.transport.backend);
  app.add_option("--provider", options.transport.provider);
  app.add_option("--chunk-bytes", options.transport.chunk_bytes);
  app.add_option("--profile", options.link_profile);
  app.add_option("--heartbeat-ms", [&](const CLI::results_t& r) {
    options.heartbeat_interval = std::chrono::milliseconds(std::stoll(r[0]));
    return true;
  });
  app.add_option("--mode", mode)->check(CLI::IsMember({"exchange", "soak", "transfer"}));
  app.add_option("--bytes", bytes);
  app.add_option("--rounds", rounds);
  int broken_rank = -1;
  app.add_option("--broken-rank", broken_rank, "this rank asks for a provider that does not exist");
  CLI11_PARSE(app, argc, argv);
  murmur::set_log_rank(options.rank);
  if (options.rank == broken_rank) options.transport.provider = "no-such-provider";
  try {
    auto group = murmur::fabric::Group::join(options);
    if (mode == "exchange") return run_exchange(*group, bytes, rounds);
    if (mode == "soak") return run_soak(*group);
    return run_transfer(*group, bytes);
  } catch (const std::exception& e) {
    std::cerr << "rank " << options.rank << ": " << e.what() << "\n";
    return 1;
  }
}
