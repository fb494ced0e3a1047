#include "peer/api/join_exchange.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "common/log.h"
#include "fabric/errors.h"

namespace murmur::peer {
namespace {

// Tag channel of the join transfer (the gossip uses 1, the collectives 2).
constexpr std::uint8_t kJoinChannel = 3;

struct Header {
  std::uint64_t first_round = 0;
  std::uint64_t state_bytes = 0;
  std::uint64_t floats = 0;
};

// The user's state may be larger than the model (momentum and more), but
// not without bound: it comes from the network.
std::uint64_t state_limit(std::size_t floats) { return 16 * floats * sizeof(float) + (std::uint64_t{1} << 20); }

void wait(gossip::Communicator& comm, const std::vector<fabric::RequestPtr>& requests, double timeout_s) {
  comm.wait_all(requests, timeout_s);
}

}  // namespace

JoinExchange::JoinExchange(gossip::Communicator& comm, double timeout_s, std::function<std::string()> provide,
                           std::function<void(const std::string&)> accept)
    : comm_(comm), timeout_s_(timeout_s), provide_(std::move(provide)), accept_(std::move(accept)) {}

int JoinExchange::sponsor_of(const std::vector<int>& members, const std::vector<int>& joined) {
  for (int m : members)
    if (std::find(joined.begin(), joined.end(), m) == joined.end()) return m;
  return -1;
}

void JoinExchange::exchange(const std::vector<int>& members, const std::vector<int>& joined, std::span<float> params,
                            std::uint64_t first_round) {
  const int sponsor = sponsor_of(members, joined);
  const int me = comm_.rank();
  if (sponsor < 0) throw std::runtime_error("join: a view of joiners only has no member to take the state from");
  if (me == sponsor) {
    for (int joiner : joined) send(joiner, params, first_round);
  } else if (std::find(joined.begin(), joined.end(), me) != joined.end()) {
    receive(sponsor, params, first_round);
  }
}

void JoinExchange::send(int joiner, std::span<const float> params, std::uint64_t first_round) {
  const auto tag = gossip::make_tag(kJoinChannel, gossip::Phase::kJoinState, first_round);
  auto state = std::make_shared<std::string>(provide_ ? provide_() : std::string());
  auto header = std::make_shared<Header>(Header{first_round, state->size(), params.size()});
  auto model = std::make_shared<std::vector<float>>(params.begin(), params.end());
  std::vector<fabric::RequestPtr> requests;
  requests.push_back(comm_.isend(joiner, tag, std::as_bytes(std::span<const Header>(header.get(), 1))));
  requests.back()->retain(header);
  requests.push_back(comm_.isend(joiner, tag, std::as_bytes(std::span<const char>(*state))));
  requests.back()->retain(state);
  requests.push_back(comm_.isend(joiner, tag, std::as_bytes(std::span<const float>(*model))));
  requests.back()->retain(model);
  try {
    wait(comm_, requests, timeout_s_);
  } catch (const fabric::PeerError& e) {
    // The joiner is gone: the membership service will drop it; this member
    // goes on.
    peer_log().warn("join: could not hand rank {} ({}) the job's state: {}", joiner, comm_.host(joiner), e.what());
    return;
  }
  peer_log().info("join: sent rank {} ({}) the model ({} floats) and {} bytes of state at round {}", joiner,
                  comm_.host(joiner), params.size(), state->size(), first_round);
}

void JoinExchange::receive(int sponsor, std::span<float> params, std::uint64_t first_round) {
  const auto tag = gossip::make_tag(kJoinChannel, gossip::Phase::kJoinState, first_round);
  auto header = std::make_shared<Header>();
  auto r = comm_.irecv(sponsor, tag, std::as_writable_bytes(std::span<Header>(header.get(), 1)));
  r->retain(header);
  wait(comm_, {r}, timeout_s_);
  const auto who = "rank " + std::to_string(sponsor) + " (" + comm_.host(sponsor) + ")";
  if (r->bytes() != sizeof(Header) || header->first_round != first_round || header->floats != params.size() ||
      header->state_bytes > state_limit(params.size())) {
    throw std::runtime_error("join: " + who + " sent a state header for round " + std::to_string(header->first_round) +
                             " with " + std::to_string(header->floats) + " floats and " +
                             std::to_string(header->state_bytes) + " bytes of state; this member expected round " +
                             std::to_string(first_round) + " and " + std::to_string(params.size()) +
                             " floats (do the tensors differ?)");
  }
  auto state = std::make_shared<std::string>(header->state_bytes, '\0');
  auto model = std::make_shared<std::vector<float>>(params.size());
  std::vector<fabric::RequestPtr> requests{
      comm_.irecv(sponsor, tag, std::as_writable_bytes(std::span<char>(state->data(), state->size()))),
      comm_.irecv(sponsor, tag, std::as_writable_bytes(std::span<float>(*model)))};
  requests[0]->retain(state);
  requests[1]->retain(model);
  wait(comm_, requests, timeout_s_);
  if (requests[0]->bytes() != state->size() || requests[1]->bytes() != model->size() * sizeof(float))
    throw std::runtime_error("join: " + who + " sent a state or model of another size than its header said");
  std::copy(model->begin(), model->end(), params.begin());
  if (accept_) accept_(*state);
  peer_log().info("join: took the model ({} floats) and {} bytes of state from {}; entering at round {}", params.size(),
                  state->size(), who, first_round);
}

}  // namespace murmur::peer
