// murmur-fabric-demo: several local peers meet through the rendezvous and
// exchange data over the fabric, then the launcher prints what moved and how
// fast. It is the smallest complete murmur job: launcher + rendezvous +
// group join + isend/irecv + failure handling.
//
//   murmur-fabric-demo -np 4 --backend libfabric --provider auto --mib 16
#include <CLI/CLI.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "common/host.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "fabric/group.h"
#include "fabric/rendezvous/server.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
  int np = 4;
  std::string backend = "libfabric";
  std::string provider = "auto";
  std::string profile;
  double mib = 16;
  int rounds = 5;
  // Peer mode (set by the launcher for its children).
  int rank = -1;
  std::uint16_t port = 0;
  std::string token;
};

// One peer: every round, send `bytes` to both ring neighbours and receive
// from both; check what arrived; print one RESULT line.
int run_peer(const Settings& s) {
  murmur::set_log_rank(s.rank);
  murmur::fabric::GroupOptions options;
  options.rank = s.rank;
  options.size = s.np;
  options.rendezvous_port = s.port;
  options.token = s.token;
  options.transport.backend = s.backend;
  options.transport.provider = s.provider;
  options.link_profile = s.profile;
  const auto bytes = static_cast<std::size_t>(s.mib * (1 << 20));
  const int left = (s.rank + s.np - 1) % s.np, right = (s.rank + 1) % s.np;
  std::vector<int> neighbours = left == right ? std::vector<int>{left} : std::vector<int>{left, right};
  // Declared before the group, so destroyed after its transport: after a
  // peer failure the transport may use a failed request's buffer until it
  // is closed (transport.h, buffer rule).
  std::vector<std::uint8_t> out(bytes, static_cast<std::uint8_t>(s.rank));
  std::vector<std::vector<std::uint8_t>> in(neighbours.size(), std::vector<std::uint8_t>(bytes));
  auto group = murmur::fabric::Group::join(options);
  auto& t = group->transport();
  std::size_t sent = 0, received = 0;
  group->barrier("demo/start", std::chrono::seconds(60));
  auto start = Clock::now();
  for (int round = 0; round < s.rounds; ++round) {
    std::vector<murmur::fabric::RequestPtr> requests;
    for (std::size_t i = 0; i < neighbours.size(); ++i)
      requests.push_back(t.irecv(neighbours[i], round, in[i].data(), bytes));
    for (int n : neighbours) requests.push_back(t.isend(n, round, out.data(), bytes));
    if (!murmur::fabric::wait_all(requests, Clock::now() + std::chrono::seconds(120))) {
      throw std::runtime_error("round " + std::to_string(round) + " did not finish in 120 s");
    }
    for (std::size_t i = 0; i < neighbours.size(); ++i) {
      auto expect = static_cast<std::uint8_t>(neighbours[i]);
      for (auto b : in[i]) {
        if (b != expect) throw std::runtime_error("corrupt data from rank " + std::to_string(neighbours[i]));
      }
      received += requests[i]->bytes();
    }
    sent += bytes * neighbours.size();
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  group->barrier("demo/done", std::chrono::seconds(60));
  std::printf("RESULT rank=%d transport=%s sent=%zu received=%zu seconds=%.6f\n", s.rank, t.name().c_str(), sent,
              received, seconds);
  std::fflush(stdout);
  return 0;
}

int run_launcher(const Settings& s, const char* self) {
  murmur::fabric::rendezvous::ServerOptions server_options;
  server_options.bind_host = "127.0.0.1";
  server_options.token = s.token.empty() ? "murmur-demo" : s.token;
  murmur::fabric::rendezvous::Server server(server_options);
  auto dir = std::filesystem::temp_directory_path() / ("murmur-demo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<murmur::Subprocess> peers;
  for (int r = 0; r < s.np; ++r) {
    murmur::Subprocess::Options o;
    std::ostringstream mib;
    mib << s.mib;
    o.argv = {self,
              "--peer-rank",
              std::to_string(r),
              "--rendezvous-port",
              std::to_string(server.port()),
              "--token",
              server_options.token,
              "-n",
              std::to_string(s.np),
              "--backend",
              s.backend,
              "--provider",
              s.provider,
              "--mib",
              mib.str(),
              "--rounds",
              std::to_string(s.rounds)};
    if (!s.profile.empty()) o.argv.insert(o.argv.end(), {"--profile", s.profile});
    o.stdout_path = (dir / ("rank" + std::to_string(r) + ".out")).string();
    peers.emplace_back(o);
  }
  int failures = 0;
  auto deadline = Clock::now() + std::chrono::minutes(10);
  std::printf("%-5s %-16s %12s %12s %10s %12s\n", "rank", "transport", "sent MiB", "recv MiB", "seconds", "MiB/s out");
  double total_sent = 0, total_seconds = 0;
  for (int r = 0; r < s.np; ++r) {
    auto status = peers[r].wait_until(deadline);
    std::ifstream in(dir / ("rank" + std::to_string(r) + ".out"));
    std::string line, result;
    while (std::getline(in, line))
      if (line.rfind("RESULT ", 0) == 0) result = line;
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0 || result.empty()) {
      std::fprintf(stderr, "murmur-fabric-demo: rank %d %s\n", r,
                   status ? murmur::Subprocess::describe_status(*status).c_str() : "did not finish in 10 minutes");
      ++failures;
      continue;
    }
    char transport[64] = {};
    std::size_t sent = 0, received = 0;
    double seconds = 0;
    int rank = 0;
    std::sscanf(result.c_str(), "RESULT rank=%d transport=%63s sent=%zu received=%zu seconds=%lf", &rank, transport,
                &sent, &received, &seconds);
    std::printf("%-5d %-16s %12.1f %12.1f %10.3f %12.1f\n", rank, transport, sent / 1048576.0, received / 1048576.0,
                seconds, sent / 1048576.0 / seconds);
    total_sent += sent;
    total_seconds = std::max(total_seconds, seconds);
  }
  std::filesystem::remove_all(dir);
  for (auto& p : peers) murmur::remove_shm_regions_of(p.pid());
  if (failures > 0) return 1;
  std::printf("total: %.1f MiB moved by %d peers in %.3f s (%.1f MiB/s aggregate)\n", total_sent / 1048576.0, s.np,
              total_seconds, total_sent / 1048576.0 / total_seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{"murmur-fabric-demo: local peers exchange data through the murmur fabric"};
  app.add_option("-n,--np", s.np, "number of local peers")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--backend", s.backend, "fabric backend: libfabric or asio")->capture_default_str();
  app.add_option("--provider", s.provider,
                 "libfabric provider: auto, tcp, shm, verbs, net (opt-in native tcp: docs/fabric-performance.md), "
                 "or shm+tcp, shm+net, shm+verbs (shm to peers on this machine, the other between machines)")
      ->capture_default_str();
  app.add_option("--profile", s.profile, "link emulation profile, e.g. 10gbe or lat=2ms,bw=100mbit");
  app.add_option("--mib", s.mib, "MiB per message")->check(CLI::Range(0.0, 1024.0))->capture_default_str();
  app.add_option("--rounds", s.rounds, "rounds of neighbour exchange")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--token", s.token, "cluster token")->envname("MURMUR_TOKEN");
  app.add_option("--peer-rank", s.rank, "internal: run as this rank")->group("");
  app.add_option("--rendezvous-port", s.port, "internal: rendezvous port")->group("");
  CLI11_PARSE(app, argc, argv);
  try {
    if (s.rank >= 0) return run_peer(s);
    return run_launcher(s, "/proc/self/exe");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "murmur-fabric-demo%s: %s\n", s.rank >= 0 ? (" rank " + std::to_string(s.rank)).c_str() : "",
                 e.what());
    return 1;
  }
}
