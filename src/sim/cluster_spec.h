// ClusterSpec: the machines murmur-sim simulates: how many GPUs, how many per
// node, the link between GPUs of one node and the NIC between nodes, and
// optional stragglers.
//
// Networks are named presets (the seed paper's three: 10gbe-tcp,
// 100gb-ib-rdma, 100gbe-tcp; their constants come from the calibration,
// docs/sim.md) or given by value. A cluster file (format in docs/sim-files.md) is
// refused with a ClusterError naming path:line and the reason.
// Thread safety: plain values.
#pragma once

#include <string>
#include <vector>

#include "common/line_reader.h"

namespace murmur::sim {

// alpha-beta: a message of b bytes takes latency_s + b / bandwidth_Bps.
struct LinkSpec {
  double latency_s = 0;
  double bandwidth_Bps = 0;
  // What latency_s becomes while the sender's host computes (0: the same).
  // On a CPU host the communication threads wait for cores the compute
  // holds, so a message sent during backward waits for a core at every
  // hop; on a GPU it does not (the GPU stacks' contention is
  // overlap_share's). Read by the paper methods on `stack murmur` only.
  double busy_latency_s = 0;
  // What each further message of a ring step costs when several rings post
  // their steps together (murmur's bytescheduler-a2a window: k concurrent
  // all-reduces), where latency_s is a lone message's: on a host whose
  // cores the peers share, the messages' handling does not overlap as
  // their wire latencies do. 0: they overlap fully. At most latency_s.
  // Read by the paper methods on `stack murmur` only.
  double concurrent_message_s = 0;
  double seconds(double bytes) const { return latency_s + bytes / bandwidth_Bps; }
  double busy_latency() const { return busy_latency_s > latency_s ? busy_latency_s : latency_s; }
};

struct Straggler {
  int rank = 0;
  double slowdown = 1;  // compute time multiplier, >= 1
};

// A link between two ranks that differs from its class for a while (a
// degraded cable, a congested switch port): from from_s until to_s (virtual
// seconds, to_s may be infinity), messages between a and b, both ways, go
// through `link` after leaving the sender's NIC.
struct LinkEpisode {
  int a = 0;
  int b = 0;
  double from_s = 0;
  double to_s = 0;
  LinkSpec link;
};

// Whose software moves the bytes: the seed paper's GPU stacks (Horovod and
// NCCL, BytePS, ByteScheduler, with their fitted per-operation costs) or
// murmur's own runtime (its gossip algorithms over its fabric: a message
// costs the links' latency and bandwidth and nothing else; the cost models
// follow murmur's variants of the methods, docs/sim.md).
enum class Stack { kPaper, kMurmur };

struct ClusterSpec {
  int gpus = 1;
  int gpus_per_node = 4;
  std::string network = "10gbe-tcp";  // a preset name, or "custom"
  LinkSpec inter_node;                // per NIC, each direction
  LinkSpec intra_node;                // between two GPUs of one node
  std::vector<Straggler> stragglers;
  std::vector<LinkEpisode> episodes;
  Stack stack = Stack::kPaper;
  // Peers that compute on one host's CPU cores (a CPU cluster, or several
  // murmur peers on one machine): every peers_per_host consecutive ranks
  // share cores_per_host cores. 0: each rank computes on its own device
  // (GPUs), unshared.
  int peers_per_host = 0;
  int cores_per_host = 0;

  int nodes() const { return (gpus + gpus_per_node - 1) / gpus_per_node; }
  int node_of(int rank) const { return rank / gpus_per_node; }
  double slowdown(int rank) const;  // 1 unless a straggler
  // Compute time multiplier of a host's shared cores: the synchronous
  // methods compute on every peer at once, so P peers on C < P cores each
  // take P / C times as long (1 without a host line, or with C >= P).
  double host_contention() const;
};

class ClusterError : public ParseError {
 public:
  // A fault that is not in a file (a generator's parameters, a flag): the
  // message is `message` alone.
  explicit ClusterError(const std::string& message) : ParseError("", 0, message) {}
  // A fault at path:line (line 0: the file as a whole).
  ClusterError(const std::string& path, int line, const std::string& reason) : ParseError(path, line, reason) {}
};

// Parses a cluster file; throws ClusterError "path:line: reason".
ClusterSpec load_cluster_file(const std::string& path);

}  // namespace murmur::sim
