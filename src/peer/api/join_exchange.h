// JoinExchange: how a member that joins a running job gets the job's state.
//
// When the gossip adopts a view that admits new members, at the view's
// first round (ViewChange::exchange_params, on the caller's thread inside
// step()), the view's sponsor (its lowest-ranked member that is not joining)
// sends each joiner, over the data plane on its own tag channel:
//   1. a header (the view's first round, the size of the user's state, the
//      number of floats) followed by the user's state (PeerConfig::
//      join_state(): an optimizer's momentum, the step, the epoch...), and
//   2. its registered tensors as they are at that point (the round before
//      folded in, this step's local update made).
// The joiner receives both into its registered tensors and hands the state
// to PeerConfig::on_join_state. Both ends then run the view's first round
// with that model. Sizes are checked against the joiner's own before use:
// the bytes come from the network.
//
// Blocking: send/receive block until the transfer completes or
// `timeout_s` (the joiner then fails: it cannot take part without a model).
// Threads: the caller thread of the gossip. Not thread-safe otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gossip/algorithm/communicator.h"

namespace murmur::peer {

class JoinExchange {
 public:
  JoinExchange(gossip::Communicator& comm, double timeout_s, std::function<std::string()> provide,
               std::function<void(const std::string&)> accept);

  // The member that sends the joiners their state: the lowest rank of
  // `members` not in `joined`.
  static int sponsor_of(const std::vector<int>& members, const std::vector<int>& joined);

  // At the first round `first_round` of a view that admits `joined`: the
  // sponsor sends, a joiner receives (into `params`), anyone else does
  // nothing.
  void exchange(const std::vector<int>& members, const std::vector<int>& joined, std::span<float> params,
                std::uint64_t first_round);

 private:
  void send(int joiner, std::span<const float> params, std::uint64_t first_round);
  void receive(int sponsor, std::span<float> params, std::uint64_t first_round);

  gossip::Communicator& comm_;
  const double timeout_s_;
  std::function<std::string()> provide_;
  std::function<void(const std::string&)> accept_;
};

}  // namespace murmur::peer
