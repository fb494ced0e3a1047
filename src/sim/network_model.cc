#include "sim/network_model.h"

#include <algorithm>
#include <string>

#include "common/check.h"

namespace murmur::sim {
namespace {

void check_link(const LinkSpec& link, const char* which) {
  if (!(link.bandwidth_Bps > 0))
    throw ClusterError(std::string("network model: ") + which + " bandwidth must be > 0 B/s, got " +
                       std::to_string(link.bandwidth_Bps) + " (set it in the cluster file or pick a network preset)");
  if (!(link.latency_s >= 0))
    throw ClusterError(std::string("network model: ") + which + " latency must be >= 0 s, got " +
                       std::to_string(link.latency_s));
}

}  // namespace

NetworkModel::NetworkModel(const ClusterSpec& cluster) : cluster_(cluster) {
  if (cluster_.gpus < 1 || cluster_.gpus_per_node < 1)
    throw ClusterError("network model: gpus and gpus_per_node must be >= 1, got " + std::to_string(cluster_.gpus) +
                       " and " + std::to_string(cluster_.gpus_per_node));
  if (cluster_.nodes() > 1) check_link(cluster_.inter_node, "inter_node");
  if (std::min(cluster_.gpus, cluster_.gpus_per_node) > 1) check_link(cluster_.intra_node, "intra_node");
  const auto nodes = static_cast<std::size_t>(cluster_.nodes());
  const auto gpus = static_cast<std::size_t>(cluster_.gpus);
  nic_tx_free_.assign(nodes, 0.0);
  nic_rx_free_.assign(nodes, 0.0);
  nic_bytes_.assign(nodes, NicBytes{});
  gpu_tx_free_.assign(gpus, 0.0);
  gpu_rx_free_.assign(gpus, 0.0);
  for (const LinkEpisode& e : cluster_.episodes) {
    if (e.a < 0 || e.b < 0 || e.a >= cluster_.gpus || e.b >= cluster_.gpus || e.a == e.b)
      throw ClusterError("network model: link episode " + std::to_string(e.a) + "-" + std::to_string(e.b) +
                         " does not join two ranks below " + std::to_string(cluster_.gpus));
    check_link(e.link, "link episode");
  }
}

double NetworkModel::depart(int src, int dst, double bytes, double post_s) {
  MURMUR_CHECK(src >= 0 && src < cluster_.gpus);
  MURMUR_CHECK(dst >= 0 && dst < cluster_.gpus);
  if (src == dst) return post_s;
  const bool local = same_node(src, dst);
  double& tx_free = local ? gpu_tx_free_[src] : nic_tx_free_[cluster_.node_of(src)];
  tx_free = std::max(post_s, tx_free) + bytes / link(src, dst).bandwidth_Bps;

  link_bytes_[{src, dst}] += bytes;
  ++messages_;
  if (local) {
    intra_bytes_ += bytes;
  } else {
    inter_bytes_ += bytes;
    nic_bytes_[cluster_.node_of(src)].sent += bytes;
    nic_bytes_[cluster_.node_of(dst)].received += bytes;
  }
  return tx_free;
}

const LinkEpisode* NetworkModel::episode(int src, int dst, double t) const {
  for (const LinkEpisode& e : cluster_.episodes)
    if (((e.a == src && e.b == dst) || (e.a == dst && e.b == src)) && t >= e.from_s && t < e.to_s) return &e;
  return nullptr;
}

NetworkModel::Hop NetworkModel::through_episode(int src, int dst, double bytes, double tx_end) {
  if (src == dst) return {tx_end, 0.0};
  // Without episodes every message is through at once: no per-pair state
  // on the hot path of a large run.
  if (cluster_.episodes.empty()) return {tx_end, link(src, dst).latency_s};
  // One pair's messages never overtake each other (one stream): a message
  // after a slowed one is through no earlier than it.
  double& free = episode_free_[{src, dst}];
  const LinkEpisode* slow = episode(src, dst, tx_end);
  if (slow == nullptr) return {std::max(tx_end, free), link(src, dst).latency_s};
  free = std::max(tx_end, free) + bytes / slow->link.bandwidth_Bps;
  return {free, slow->link.latency_s};
}

double NetworkModel::arrive(int src, int dst, double bytes, const Hop& hop) {
  if (src == dst) return hop.ready_s;
  const bool local = same_node(src, dst);
  double& rx_free = local ? gpu_rx_free_[dst] : nic_rx_free_[cluster_.node_of(dst)];
  rx_free = std::max(hop.ready_s, rx_free + bytes / link(src, dst).bandwidth_Bps);
  // Without episodes one link class has one latency and the receiver's
  // queue is FIFO, so arrivals keep posting order by themselves.
  if (cluster_.episodes.empty()) return rx_free + hop.latency_s;
  // In posting order per pair, whatever the latencies (an episode's may
  // differ from the link's).
  double& last = last_arrival_[{src, dst}];
  last = std::max(last, rx_free + hop.latency_s);
  return last;
}

}  // namespace murmur::sim
