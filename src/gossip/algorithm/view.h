// Membership views as the algorithms see them.
//
// A job's members are numbered by their transport rank ("member id"), which
// never changes and is never reused. A View is the set of members that take
// part from some round on, with a generation number that grows with every
// change. Algorithms keep addressing peers by member id; what changes at a
// view is the graph: MemberTopology lifts a topology built over the view's
// positions (node k = members[k]) back into member-id space, where members
// outside the view have no edges. Mixing weights come from that graph as
// before (mixing.h), so an algorithm that reads its neighbourhood from the
// topology needs no translation.
//
// Thread safety: values; MemberTopology is immutable after construction.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gossip/topology/topology.h"

namespace murmur::gossip {

struct View {
  std::uint64_t generation = 0;
  std::vector<int> members;  // member ids, ascending

  bool contains(int member) const { return std::binary_search(members.begin(), members.end(), member); }
  // Position of `member` in the view, or -1.
  int position(int member) const {
    auto it = std::lower_bound(members.begin(), members.end(), member);
    return it != members.end() && *it == member ? static_cast<int>(it - members.begin()) : -1;
  }
  int size() const { return static_cast<int>(members.size()); }
};

// What an algorithm is handed when a view takes effect: the view, the graph
// for it in member-id space (null for algorithms without a topology), and
// who left and who joined since the view before.
struct ViewChange {
  View view;
  std::shared_ptr<const Topology> topology;
  std::vector<int> lost;
  std::vector<int> joined;
  std::uint64_t first_round = 0;  // the round (or step) from which it applies
  // Called by the algorithm with the caller's parameters when it adopts the
  // view, before its first round (caller thread): a joining member receives
  // its model here, the member that sponsors it sends it. May be empty.
  std::function<void(std::span<float> params, std::uint64_t first_round)> exchange_params;
};

// What an algorithm asks before each round (adpsgd: each step): the view
// change to adopt before round `counter`, if one takes effect now. Caller
// thread of the algorithm; may block (ViewGate, view_gate.h) or not
// (PushedViews).
class ViewSchedule {
 public:
  virtual ~ViewSchedule() = default;
  virtual std::optional<ViewChange> before(std::uint64_t counter) = 0;
};

// Views chosen by the owner, adopted at the next round: for an algorithm
// whose every round is a collective call that all ranks make at the same
// point (the Peer's exact all-reduce), so that the owner can hand it the
// view the gossip is in. A pushed change's first_round, if past the
// algorithm's next round, moves the algorithm's round counter there (a
// joiner continues at its sponsor's count). Thread-safe.
class PushedViews final : public ViewSchedule {
 public:
  void push(ViewChange change);
  std::optional<ViewChange> before(std::uint64_t counter) override;

 private:
  std::mutex mutex_;
  std::optional<ViewChange> pending_;
};

// A topology over a view's positions, seen in member-id space of
// `member_space` nodes (the transport's size).
class MemberTopology final : public Topology {
 public:
  MemberTopology(std::shared_ptr<const Topology> positions, std::vector<int> members, int member_space);

  std::string name() const override { return positions_->name(); }
  int size() const override { return member_space_; }
  bool time_varying() const override { return positions_->time_varying(); }
  std::uint64_t period() const override { return positions_->period(); }
  Graph at_round(std::uint64_t round) const override;

  const Topology& positions() const { return *positions_; }

 private:
  std::shared_ptr<const Topology> positions_;
  std::vector<int> members_;
  int member_space_;
};

// The graph `g` over positions with node k renamed members[k], in a graph of
// `member_space` nodes; explicit weights and labels are kept.
Graph lift_to_members(const Graph& g, const std::vector<int>& members, int member_space);

}  // namespace murmur::gossip
