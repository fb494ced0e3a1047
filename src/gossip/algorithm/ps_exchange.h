// ParameterServerExchange: the worker side of the parameter-server methods
// (bsp-ps, wfbp-ps, bytescheduler-ps) and the co-located server it owns
// (parameter_server.h). GradientAlgorithm::average() calls push_pull()
// instead of a ring all-reduce when a method runs over a parameter server.
//
// Tensors (a layer for bsp-ps and wfbp-ps, a partition for
// bytescheduler-ps; numbered by the method, the same on every rank) are cut
// into shards of at most `max_shard_floats` (--ps-partition: BytePS's
// partitions, so that one large layer does not load one server with most
// of the model) and the shards spread over the servers, the first
// `--servers` members of the view (all by default), by size
// (ps_sharding.h). push_pull() pushes each shard to its server (a message,
// or in memory when this rank serves it), tells this rank's server which
// shards it serves (in the call's order), and waits for the means.
//
// Membership: servers hold nothing between steps, so a view change only
// re-shards (the next round's first push_pull() sees other members). A
// server lost within a round leaves its shards with the workers' own
// gradient (push_pull() returns false; the view that drops it re-averages
// the models, gradient_algorithm.h); a lost worker is left out of the
// servers' means (ParameterServer).
//
// Threads: every call on the algorithm's communication thread, one round
// at a time: begin with push_pull() calls, end with end_round() (or
// abandon() when the round failed). Internal to algorithm/.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gossip/algorithm/parameter_server.h"
#include "gossip/algorithm/ps_sharding.h"

namespace murmur::gossip::detail {

class ParameterServerExchange {
 public:
  // `sizes` gives the floats of every tensor id (called when the sharding
  // is made: at a round's first push_pull with other members than before).
  ParameterServerExchange(std::string name, Traffic& traffic, RingWait wait, ParameterServer::TagOf tag, int servers,
                          std::size_t max_shard_floats, std::function<std::vector<std::size_t>()> sizes);

  // Averages `pieces` (tensor ids `ids`) over `members` through their
  // servers. False: a lost server left some pieces as they were.
  bool push_pull(std::uint64_t round, std::span<const int> members, std::span<const std::span<float>> pieces,
                 std::span<const std::uint32_t> ids);
  // The round's last call: waits for this rank's server to finish the round.
  // False: the server left a lost worker's push out.
  bool end_round();
  void abandon() { server_.stop(); }

 private:
  void shard_over(std::span<const int> members);

  const std::string name_;
  Traffic& traffic_;
  const RingWait wait_;
  const ParameterServer::TagOf tag_;
  const int servers_;
  const std::size_t max_shard_floats_;
  const std::function<std::vector<std::size_t>()> sizes_;
  std::vector<int> members_;  // the members the sharding was made for
  std::vector<std::size_t> tensor_floats_;
  ShardCut shards_;         // the tensors' shards (ids in tags and at the servers)
  std::vector<int> owner_;  // shard id -> server rank
  bool in_round_ = false;
  std::uint64_t round_ = 0;
  ParameterServer server_;  // last: its thread stops first
};

}  // namespace murmur::gossip::detail
