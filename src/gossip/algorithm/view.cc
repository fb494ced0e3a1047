#include "gossip/algorithm/view.h"

#include <algorithm>

#include "common/check.h"

namespace murmur::gossip {

void PushedViews::push(ViewChange change) {
  std::lock_guard lock(mutex_);
  // A later view replaces one not yet adopted, but not the round counter a
  // push before it asked for (a joiner's: view.h).
  if (pending_) change.first_round = std::max(change.first_round, pending_->first_round);
  pending_ = std::move(change);
}

std::optional<ViewChange> PushedViews::before(std::uint64_t counter) {
  std::lock_guard lock(mutex_);
  std::optional<ViewChange> change;
  change.swap(pending_);
  // The owner may move the round counter forward (a joiner's collectives
  // continue at its sponsor's count), never back.
  if (change) change->first_round = std::max(change->first_round, counter);
  return change;
}

Graph lift_to_members(const Graph& g, const std::vector<int>& members, int member_space) {
  MURMUR_CHECK(static_cast<int>(members.size()) == g.size());
  Graph lifted(member_space, g.directed());
  for (int a = 0; a < g.size(); ++a) {
    lifted.set_self_weight(members[a], g.self_weight(a));
    for (const Link& l : g.out(a)) {
      // An undirected edge is stored at both ends; add it once.
      if (!g.directed() && l.peer < a) continue;
      lifted.add_edge(members[a], members[l.peer], l.weight, l.label);
    }
  }
  return lifted;
}

MemberTopology::MemberTopology(std::shared_ptr<const Topology> positions, std::vector<int> members, int member_space)
    : positions_(std::move(positions)), members_(std::move(members)), member_space_(member_space) {
  MURMUR_CHECK(positions_ != nullptr && positions_->size() == static_cast<int>(members_.size()));
  MURMUR_CHECK(members_.empty() || members_.back() < member_space_);
}

Graph MemberTopology::at_round(std::uint64_t round) const {
  return lift_to_members(positions_->at_round(round), members_, member_space_);
}

}  // namespace murmur::gossip
