// NetworkModel: when a message of murmur-sim arrives, from a ClusterSpec's
// alpha-beta links and the queues a transfer occupies. The model and why it
// is built so (two queue stages rather than one reservation, FIFO rather
// than fair sharing, link episodes): docs/sim.md, "murmur's gossip, run for
// real"; this header states what a caller runs and relies on.
//
// Links: two ranks on one node (ClusterSpec::node_of) talk over intra_node,
// others over inter_node. A message to oneself is free (it arrives when it
// is posted) and is not counted.
//
// Queues: every node's NIC has a transmit and a receive queue for
// inter-node traffic, every GPU a send and a receive port for intra-node
// traffic; each serves whole messages, FIFO. A message passes two queues
// of its link class, in two stages that the caller runs at their times:
//   depart (at posting):            tx_end  = max(post, tx_free) + serial
//                                   tx_free = tx_end
//   arrive (at ready, in time order): rx_end = max(ready, rx_free + serial)
//                                   rx_free = rx_end
//   arrival = rx_end + latency,     serial = bytes / bandwidth
// where ready is tx_end, or a link episode's end (below); a pair's arrivals
// never go back in time. An idle receiver takes the bytes while they are
// sent (rx_end = tx_end); a busy one takes them after what it is receiving.
//
// Link episodes (ClusterSpec::episodes): while one covers a pair, its
// messages pass a third FIFO stage after the sender's queue, at the
// episode's bandwidth, and take its latency. The caller runs it
// (through_episode) at tx_end and the receiver's stage (arrive) when the
// message is through it.
//
// Counters: simulated bytes per (src, dst) link, and per NIC (inter-node
// bytes sent and received by each node), and per link class.
//
// Thread safety: none; murmur-sim calls it with the VirtualRuntime's baton
// held. Never blocks.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "sim/cluster_spec.h"

namespace murmur::sim {

class NetworkModel final {
 public:
  // Throws ClusterError when a link class the cluster uses has a bandwidth
  // <= 0 or a negative latency, or when gpus / gpus_per_node < 1.
  explicit NetworkModel(const ClusterSpec& cluster);

  const ClusterSpec& cluster() const { return cluster_; }
  bool same_node(int a, int b) const { return cluster_.node_of(a) == cluster_.node_of(b); }
  const LinkSpec& link(int src, int dst) const {
    return same_node(src, dst) ? cluster_.intra_node : cluster_.inter_node;
  }

  // Stage 1, at posting: queues the message on the sender's side and
  // returns the time its last byte has left (tx_end). Counts the bytes.
  // Posts must come in nondecreasing post_s; ranks in [0, gpus). To
  // oneself: free (returns post_s, counts nothing).
  double depart(int src, int dst, double bytes, double post_s);
  // Stage 1b, at tx_end: a link episode covering the pair at tx_end passes
  // the message through its own FIFO at the episode's bandwidth. `ready_s`:
  // when its last byte is through (tx_end without an episode); `latency_s`:
  // the link's, or the episode's.
  struct Hop {
    double ready_s = 0;
    double latency_s = 0;
  };
  Hop through_episode(int src, int dst, double bytes, double tx_end);
  // Stage 2, at hop.ready_s (calls in nondecreasing ready_s): queues it on
  // the receiver's side and returns when its last byte arrives. A message
  // slowed by an episode takes the receiver's queue only once it is
  // through the slow stage, so the rest of that NIC's traffic does not wait
  // behind the slow transfer.
  double arrive(int src, int dst, double bytes, const Hop& hop);
  // The two in one, for a pair without episodes (or a caller that keeps
  // the time order of both stages itself).
  double arrive(int src, int dst, double bytes, double tx_end) {
    return arrive(src, dst, bytes, through_episode(src, dst, bytes, tx_end));
  }

  struct NicBytes {
    double sent = 0;
    double received = 0;
  };
  const std::map<std::pair<int, int>, double>& link_bytes() const { return link_bytes_; }
  const std::vector<NicBytes>& nic_bytes() const { return nic_bytes_; }  // by node, inter-node only
  double inter_node_bytes() const { return inter_bytes_; }
  double intra_node_bytes() const { return intra_bytes_; }
  std::uint64_t messages() const { return messages_; }

 private:
  ClusterSpec cluster_;
  std::vector<double> nic_tx_free_, nic_rx_free_;  // by node
  std::vector<double> gpu_tx_free_, gpu_rx_free_;  // by rank
  // The episode covering src -> dst at time t, or null.
  const LinkEpisode* episode(int src, int dst, double t) const;

  std::map<std::pair<int, int>, double> link_bytes_;
  std::map<std::pair<int, int>, double> episode_free_;  // by (src, dst): the slow stage's last message through
  std::map<std::pair<int, int>, double> last_arrival_;  // by (src, dst)
  std::vector<NicBytes> nic_bytes_;
  double inter_bytes_ = 0;
  double intra_bytes_ = 0;
  std::uint64_t messages_ = 0;
};

}  // namespace murmur::sim
