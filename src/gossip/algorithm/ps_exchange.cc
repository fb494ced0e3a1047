#include "gossip/algorithm/ps_exchange.h"

#include <algorithm>
#include <stdexcept>

#include "common/check.h"
#include "gossip/algorithm/ps_sharding.h"

namespace murmur::gossip::detail {

ParameterServerExchange::ParameterServerExchange(std::string name, Traffic& traffic, RingWait wait,
                                                 ParameterServer::TagOf tag, int servers, std::size_t max_shard_floats,
                                                 std::function<std::vector<std::size_t>()> sizes)
    : name_(name),
      traffic_(traffic),
      wait_(wait),
      tag_(tag),
      servers_(servers),
      max_shard_floats_(max_shard_floats),
      sizes_(std::move(sizes)),
      server_(std::move(name), traffic, std::move(wait), std::move(tag)) {
  MURMUR_CHECK_GE(max_shard_floats_, std::size_t{1});
}

void ParameterServerExchange::shard_over(std::span<const int> members) {
  members_.assign(members.begin(), members.end());
  tensor_floats_ = sizes_();
  shards_ = cut_shards(tensor_floats_, max_shard_floats_);
  if (shards_.floats.size() > 0x10000)
    throw std::invalid_argument(name_ + ": " + std::to_string(shards_.floats.size()) +
                                " shards, more than the 65,536 a round's tags can number (larger "
                                "--ps-partition or --bytescheduler-partition?)");
  owner_ = assign_servers(shards_.floats, server_ranks(members_, servers_));
}

bool ParameterServerExchange::push_pull(std::uint64_t round, std::span<const int> members,
                                        std::span<const std::span<float>> pieces, std::span<const std::uint32_t> ids) {
  MURMUR_CHECK_EQ(pieces.size(), ids.size());
  if (!in_round_) {
    if (owner_.empty() || !std::equal(members.begin(), members.end(), members_.begin(), members_.end()))
      shard_over(members);
    server_.begin_round(round, members_);
    in_round_ = true;
    round_ = round;
  }
  MURMUR_CHECK_EQ(round, round_);
  const int me = traffic_.comm().rank();
  // Every piece's shards, in piece order and then offset order: the order
  // in which every rank pushes and every server serves.
  struct Part {
    std::uint32_t shard;
    std::span<float> values;
  };
  std::vector<Part> parts;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    MURMUR_CHECK_LT(ids[k], tensor_floats_.size());
    MURMUR_CHECK_EQ(pieces[k].size(), tensor_floats_[ids[k]]);
    std::size_t at = 0;
    for (std::size_t s = shards_.first_shard[ids[k]]; s < shards_.first_shard[ids[k] + 1]; ++s) {
      parts.push_back({static_cast<std::uint32_t>(s), pieces[k].subspan(at, shards_.floats[s])});
      at += shards_.floats[s];
    }
  }
  std::vector<PsShard> mine;
  for (const Part& part : parts)
    if (owner_[part.shard] == me) mine.push_back({part.shard, part.values.size()});
  server_.expect(mine);
  std::vector<fabric::RequestPtr> requests;
  std::vector<MessageBuffer<float>> pulls(parts.size());
  std::vector<std::size_t> remote;  // part index of each push/pull pair in `requests`
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const Part& part = parts[k];
    const int server = owner_[part.shard];
    if (server == me) {
      server_.push_local(part.shard, part.values);
      continue;
    }
    MessageBuffer<float> push;
    push.fresh().assign(part.values.begin(), part.values.end());
    requests.push_back(traffic_.send(server, tag_(Phase::kPsPush, round, part.shard), push));
    pulls[k].fresh().resize(part.values.size() + 1);  // a longer reply is reported as such
    requests.push_back(traffic_.recv(server, tag_(Phase::kPsPull, round, part.shard), pulls[k]));
    remote.push_back(k);
  }
  wait_(requests);
  bool complete = true;
  for (std::size_t j = 0; j < remote.size(); ++j) {
    const Part& part = parts[remote[j]];
    const fabric::Request& pull = *requests[2 * j + 1];
    if (requests[2 * j]->error() || pull.error()) {
      complete = false;  // a lost server: the shard keeps this rank's gradient
      continue;
    }
    const int server = owner_[part.shard];
    if (pull.bytes() != part.values.size() * sizeof(float))
      throw std::invalid_argument(name_ + ": server rank " + std::to_string(server) + " (" +
                                  traffic_.comm().host(server) + ") sent " + std::to_string(pull.bytes()) +
                                  " bytes for shard " + std::to_string(part.shard) + ", expected " +
                                  std::to_string(part.values.size() * sizeof(float)) +
                                  ": gradient layouts differ across ranks (the same model on every rank?)");
    const MessageBuffer<float>& reply = pulls[remote[j]];
    std::copy(reply->begin(), reply->begin() + static_cast<std::ptrdiff_t>(part.values.size()), part.values.begin());
  }
  for (const Part& part : parts)
    if (owner_[part.shard] == me) server_.pull_local(part.shard, part.values);
  return complete;
}

bool ParameterServerExchange::end_round() {
  if (!in_round_) return true;
  in_round_ = false;
  return server_.end_round();
}

}  // namespace murmur::gossip::detail
