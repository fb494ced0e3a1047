#include "gossip/algorithm/ps_exchange.h"

#include <stdexcept>

#include "common/check.h"
#include "gossip/algorithm/ps_sharding.h"

namespace murmur::gossip::detail {

ParameterServerExchange::ParameterServerExchange(std::string name, Traffic& traffic, RingWait wait,
                                                 ParameterServer::TagOf tag, int servers,
                                                 std::function<std::vector<std::size_t>()> sizes)
    : name_(name),
      traffic_(traffic),
      wait_(wait),
      tag_(tag),
      servers_(servers),
      sizes_(std::move(sizes)),
      server_(std::move(name), traffic, std::move(wait), std::move(tag)) {}

void ParameterServerExchange::shard_over(std::span<const int> members) {
  members_.assign(members.begin(), members.end());
  floats_ = sizes_();
  if (floats_.size() > 0x10000)
    throw std::invalid_argument(name_ + ": " + std::to_string(floats_.size()) +
                                " tensors, more than the 65,536 a round's tags can number (larger "
                                "--bytescheduler-partition?)");
  owner_ = assign_servers(floats_, server_ranks(members_, servers_));
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
  std::vector<PsShard> mine;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    MURMUR_CHECK_LT(ids[k], owner_.size());
    MURMUR_CHECK_EQ(pieces[k].size(), floats_[ids[k]]);
    if (owner_[ids[k]] == me) mine.push_back({ids[k], pieces[k].size()});
  }
  server_.expect(mine);
  std::vector<fabric::RequestPtr> requests;
  std::vector<MessageBuffer<float>> pulls(ids.size());
  std::vector<std::size_t> remote;  // piece index of each push/pull pair in `requests`
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const int server = owner_[ids[k]];
    if (server == me) {
      server_.push_local(ids[k], pieces[k]);
      continue;
    }
    MessageBuffer<float> push;
    push.fresh().assign(pieces[k].begin(), pieces[k].end());
    requests.push_back(traffic_.send(server, tag_(Phase::kPsPush, round, ids[k]), push));
    pulls[k].fresh().resize(pieces[k].size() + 1);  // a longer reply is reported as such
    requests.push_back(traffic_.recv(server, tag_(Phase::kPsPull, round, ids[k]), pulls[k]));
    remote.push_back(k);
  }
  wait_(requests);
  bool complete = true;
  for (std::size_t j = 0; j < remote.size(); ++j) {
    const std::size_t k = remote[j];
    const fabric::Request& pull = *requests[2 * j + 1];
    if (requests[2 * j]->error() || pull.error()) {
      complete = false;  // a lost server: the piece keeps this rank's gradient
      continue;
    }
    const int server = owner_[ids[k]];
    if (pull.bytes() != pieces[k].size() * sizeof(float))
      throw std::invalid_argument(name_ + ": server rank " + std::to_string(server) + " (" +
                                  traffic_.comm().host(server) + ") sent " + std::to_string(pull.bytes()) +
                                  " bytes for shard " + std::to_string(ids[k]) + ", expected " +
                                  std::to_string(pieces[k].size() * sizeof(float)) +
                                  ": gradient layouts differ across ranks (the same model on every rank?)");
    std::copy(pulls[k]->begin(), pulls[k]->begin() + static_cast<std::ptrdiff_t>(pieces[k].size()), pieces[k].begin());
  }
  for (std::size_t k = 0; k < ids.size(); ++k)
    if (owner_[ids[k]] == me) server_.pull_local(ids[k], pieces[k]);
  return complete;
}

bool ParameterServerExchange::end_round() {
  if (!in_round_) return true;
  in_round_ = false;
  return server_.end_round();
}

}  // namespace murmur::gossip::detail
