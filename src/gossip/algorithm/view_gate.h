// ViewGate: makes every live member adopt a new membership view at the same
// round boundary, without a barrier in the rounds that do not change view.
//
// The problem: rounds pair up across members, so two neighbours must switch
// graphs before the same round. Members learn of a loss at different times,
// and some are in the middle of a round that waits for a neighbour.
//
// The rule (docs/resilience.md, "Membership views"): when a member learns
// of a proposed view, with s the last round it has started, it reports
// max(s + 2, R of the last view it agreed) and from then on starts at most
// round s + 1 until the view is committed. Once every member of the proposed
// view has reported, each computes the same first round R = the largest
// report: every member runs rounds < R on the old graph (with the lost
// members' messages excused) and round R on the new one. A member that
// joins with the view has started no round: its report (2) never exceeds a
// member's, and it learns R from the others' reports like everyone else. No deadlock: neighbours' started
// rounds differ by at most one (a round completes only after every
// neighbour started it), so each member's allowed rounds are enough to let
// its neighbours reach their own reports.
//
// Reports travel through `Agree` (the Peer publishes them in the rendezvous
// key/value store, whose values persist: every member that completes an
// agreement sees the same reports). An agreement that cannot complete
// because a later view drops a member that never reported is abandoned for
// the later one, consistently (that member can no longer report: the
// membership service refuses writes from non-members).
//
// For algorithms without rounds (adpsgd) the counter is the step.
//
// Threads: propose() from any thread (the membership callback), never
// blocks. before() and current() from the algorithm's caller thread; before()
// blocks only in the window described above. The gate runs one thread for
// the agreements. Destruction stops it and unblocks before() with an error.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gossip/algorithm/view.h"

namespace murmur::gossip {

class ViewGate final : public ViewSchedule {
 public:
  // Publishes `report` for `proposed` and returns every member's report, in
  // the order of proposed.members; nullopt when `abandon()` turned true
  // while waiting and the reports are still incomplete. Throws when the
  // agreement cannot be reached at all (the gate then fails). Blocking.
  using Agree = std::function<std::optional<std::vector<std::uint64_t>>(const View& proposed, std::uint64_t report,
                                                                        const std::function<bool()>& abandon)>;
  // Builds what the algorithm adopts when moving from `from` to `to`
  // (topology for the new view, lost and joined members). Caller thread.
  using Prepare = std::function<ViewChange(const View& from, const View& to)>;

  // A member outside `initial` is joining: its first before() waits for the
  // agreed view that admits it and returns it with the view's first round,
  // which may be past `counter` (the caller moves its round counter there).
  ViewGate(View initial, int self, Agree agree, Prepare prepare);
  ~ViewGate();
  ViewGate(const ViewGate&) = delete;
  ViewGate& operator=(const ViewGate&) = delete;

  // A new view from the membership service. Generations at or below the
  // newest known are ignored. `reason` is kept for the error a member that
  // is not in the view gets from before().
  void propose(View next, std::string reason = {});

  // Before starting round (or step) `counter`, which grows by one per call
  // or more. Returns the change to adopt before it, if a committed view
  // takes effect now. Throws std::runtime_error when this member is not in
  // a newer view (it was declared lost) or the gate failed.
  std::optional<ViewChange> before(std::uint64_t counter) override;

  View current() const;             // the view adopted by the caller
  std::uint64_t committed() const;  // the newest committed generation
  // Seconds before() spent blocked waiting for agreements, in total.
  double blocked_seconds() const;

 private:
  struct Committed {
    View view;
    std::uint64_t first_round;
  };
  void run();
  bool superseded(const View& proposed) const;  // with mutex_ held

  const int self_;
  const Agree agree_;
  const Prepare prepare_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  View current_;                    // adopted (caller thread writes, under mutex_)
  std::uint64_t newest_known_ = 0;  // generation
  std::deque<View> proposals_;      // not yet agreed, ascending generation
  std::deque<Committed> commits_;   // agreed, not yet adopted
  std::uint64_t last_first_round_ = 0;
  std::uint64_t committed_generation_ = 0;
  bool reporting_ = false;     // a report is out and its view not committed
  std::uint64_t limit_ = 0;    // while reporting_: the last round that may start
  std::uint64_t started_ = 0;  // the last counter passed to before()
  bool started_any_ = false;
  std::string expelled_;  // non-empty: this member is not in a newer view
  bool joining_ = false;  // not in the adopted view yet: waiting to be admitted
  std::exception_ptr failed_;
  bool stop_ = false;
  double blocked_seconds_ = 0;
  std::thread thread_;  // last
};

}  // namespace murmur::gossip
