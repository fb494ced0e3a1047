// LocalJob: runs N processes of a test peer program on this host around an
// in-process rendezvous server, for multi-process tests (gloo's
// MultiProcTest in spirit). Each peer's stdout and stderr go to a file that
// tests read back. Used by the fabric, gossip and Peer API tests.
//
// Blocking: the constructor starts the peers and returns; wait*, and
// wait_for_output, block up to their deadline. The destructor kills and reaps
// every peer still running and removes their shm regions. Thread safety:
// none; one owner thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "fabric/rendezvous/server.h"

namespace murmur::testing {

class LocalJob {
 public:
  // Starts `size` peers of `program` (a path under the build directory, e.g.
  // "tests/fabric/fabric_test_peer") with `args` (plus --rank/--size/
  // --rendezvous-port/--token). heartbeat_timeout is the rendezvous'
  // failure-detection time.
  LocalJob(const std::string& program, int size, const std::vector<std::string>& args,
           std::chrono::milliseconds heartbeat_timeout = std::chrono::milliseconds(3000));
  // Where the job's rendezvous server runs: in this test process, or in
  // rank 0 (which gets --host-rendezvous), as a job started without
  // murmur-run (srun, mpirun, torchrun) has it.
  enum class Rendezvous { kInTest, kInRankZero };
  LocalJob(const std::string& program, int size, const std::vector<std::string>& args, Rendezvous where);
  ~LocalJob();

  // Waits for every peer; returns their raw wait statuses, or nullopt for
  // those still running at the deadline (which are then killed).
  std::vector<std::optional<int>> wait_all(std::chrono::seconds timeout);
  std::optional<int> wait(int rank, std::chrono::steady_clock::time_point deadline);
  void kill(int rank, int signo);
  // Starts one more process of the job's program (index size(), size()+1,
  // ...; its output is output(index)) with --rank 0 --size 1 and the job's
  // rendezvous and token, plus `args`: a peer that joins the running job.
  int spawn_joiner(const std::vector<std::string>& args);
  // Destroys the job's rendezvous server, as if its process died.
  void stop_rendezvous() { server_.reset(); }
  // Everything rank `r` printed so far.
  std::string output(int rank) const;
  // Waits until rank `r`'s output contains `text`; false on timeout.
  bool wait_for_output(int rank, const std::string& text, std::chrono::seconds timeout) const;
  std::string describe(int rank, const std::optional<int>& status) const;

 private:
  // The in-test rendezvous server; returns its port.
  std::uint16_t start_server(std::chrono::milliseconds heartbeat_timeout);
  void start(int size, const std::vector<std::string>& args, std::uint16_t port, bool rank_zero_hosts);

  std::string program_;
  std::uint16_t port_ = 0;
  std::string dir_;
  std::unique_ptr<fabric::rendezvous::Server> server_;
  std::vector<Subprocess> peers_;
};

}  // namespace murmur::testing
