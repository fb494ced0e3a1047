// Membership: a Peer's side of the job's membership views.
//
// The rendezvous (fabric::Group) is the membership service: it pushes a new
// view (generation, live members) whenever a member is lost, and declares a
// member lost when its connection closes, when its heartbeats stop, or when
// a member reports a failed link to it or its silence past a deadline and its
// heartbeats confirm it (Group::suspect). This class
//   - hands every pushed view to the gossip's ViewGate, which agrees with
//     the other members on the round it takes effect (view_gate.h), with
//     reports kept in the rendezvous store ("murmur/view/<g>/<position>");
//   - builds the graph of each adopted view from the job's own topology spec
//     (topology_for_view), logs it and records its spectral gap;
//   - reports this member's data-plane evidence (FabricCommunicator's
//     failure detector: failed links at once, silence past the deadline
//     derived from observed round times);
//   - tells listeners of each adopted view (the Peer's embedding API and
//     the trainer's events).
//
// Threads: the Group's callback feeds propose() from the client's io
// thread; the gate's agreements run on its own thread; views are adopted
// on the gossip's caller thread (prepare), where listeners run. suspect()
// runs on the algorithm's communication thread. All methods thread-safe.
// Ownership: `group` must outlive this object; the gate lives here and must
// outlive the algorithms it is given to.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "fabric/group.h"
#include "gossip/algorithm/deadline.h"
#include "gossip/algorithm/view.h"
#include "gossip/algorithm/view_gate.h"
#include "gossip/topology/topology.h"
#include "murmur/gossip_options.h"

namespace murmur::peer {

// One adopted view, as listeners see it.
struct ViewEvent {
  std::uint64_t generation = 0;
  std::vector<int> members;  // ranks, ascending
  struct Departure {
    int rank;
    std::string host;
    std::string reason;
  };
  std::vector<Departure> lost;  // since the view before
  std::vector<int> joined;
  double spectral_gap = 0;  // NaN: not computed (too large) or no topology
  std::string topology;     // one line: how the graph was rebuilt
  std::uint64_t first_round = 0;
};

class Membership {
 public:
  struct Options {
    GossipOptions gossip;  // the job's spec: its topology is rebuilt per view
    // The job's graph over all ranks; null for algorithms without one.
    std::shared_ptr<const gossip::Topology> topology;
    gossip::DeadlineOptions deadline;
    std::chrono::milliseconds agreement_timeout{120000};
    // This member joined a running job (Group::join_running): its gossip
    // enters at the first round of the current view, which admitted it.
    bool joining = false;
  };
  // What a view that admits members does at its first round (JoinExchange::
  // exchange: the sponsor sends, the joiners receive). Set before the first
  // step.
  using JoinHook = std::function<void(const std::vector<int>& members, const std::vector<int>& joined,
                                      std::span<float> params, std::uint64_t first_round)>;
  void on_join(JoinHook hook);
  Membership(fabric::Group& group, Options options);
  ~Membership();
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  gossip::ViewGate& gate() { return *gate_; }
  gossip::FailureDeadline& deadline() { return deadline_; }

  // The view this member entered in (fabric::Group::entry_view): for a
  // joiner, the one that admitted it.
  const gossip::View& entry() const { return entry_; }
  // The view the gossip runs in now (the same on every member at the same
  // round or step: collectives start from it).
  gossip::View adopted() const { return gate_->current(); }
  // The views agreed after generation `after`, ascending (those the gossip
  // may not have reached yet). Collectives that cannot complete in one view
  // move to the next (scalar_gather.h).
  std::vector<gossip::View> committed_after(std::uint64_t after) const;
  // Blocks until a view newer than `generation` is agreed, or `deadline`.
  bool wait_committed_after(std::uint64_t generation, std::chrono::steady_clock::time_point deadline) const;
  // Whether `rank` is outside some view newer than `generation`.
  bool lost_after(int rank, std::uint64_t generation) const;

  // Data-plane evidence against `rank` (FabricCommunicator's detector).
  // `silent`: no completion within the deadline (declared lost only if its
  // heartbeats also stopped); otherwise its link failed.
  void suspect(int rank, bool silent, const std::string& reason);

  // Called on the gossip's caller thread with every view it adopts.
  void on_adopted(std::function<void(const ViewEvent&)> listener);
  // The graph of a view in rank space (the one the gossip adopts); null
  // without a topology.
  std::shared_ptr<const gossip::Topology> topology_for(const gossip::View& view, std::string* description,
                                                       double* spectral_gap) const;
  // Every adopted view so far, oldest first (the initial one included).
  std::vector<ViewEvent> history() const;

 private:
  void on_group_view(const fabric::MembershipView& view, const std::vector<fabric::Group::LostPeer>& lost);
  void expelled(std::uint64_t generation, const std::string& reasons);
  std::optional<std::vector<std::uint64_t>> agree(const gossip::View& proposed, std::uint64_t report,
                                                  const std::function<bool()>& abandon);
  gossip::ViewChange prepare(const gossip::View& from, const gossip::View& to);

  fabric::Group& group_;
  const Options options_;
  gossip::FailureDeadline deadline_;
  gossip::View entry_;  // set once, in the constructor

  mutable std::mutex mutex_;
  mutable std::condition_variable committed_cv_;
  std::vector<gossip::View> committed_;           // agreed, ascending (initial first)
  std::vector<ViewEvent::Departure> departures_;  // every member declared lost, with why
  std::vector<ViewEvent> history_;
  std::function<void(const ViewEvent&)> listener_;
  JoinHook join_hook_;
  std::set<int> reported_links_;  // failed links already reported

  std::unique_ptr<gossip::ViewGate> gate_;  // last: its thread uses everything above
};

}  // namespace murmur::peer
