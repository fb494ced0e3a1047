// ScheduleAgreement: the scheduler's collective (ScheduleController::Gather)
// for a Peer, off the caller's critical path.
//
// Decision k publishes this rank's proposal and collects every rank's for
// decision k on a helper thread, while the caller goes on; decision k+1
// returns that result and starts the next. So every rank uses the proposals
// of the previous decision (decisions 0 and 1 both use decision 0's: the
// first call blocks), the same vector on every rank, as the simulator's
// gather does (src/sim/runtime/gossip_run.cc). The caller waits only for ranks more than
// one decision behind, never for the rendezvous' round trips (as a barrier
// every 5 steps the agreement cost 2.3 s of a 30 s job on this host).
//
// Values come from the network: anything but three finite numbers per rank
// is refused naming the rank and host (ScalarGather); a period is clamped to
// [1, 1e6] here and to the schedule's bounds by the controller.
//
// Blocking: operator() until the previous gather is complete (timeout:
// FabricError, also for a gather that failed in the background). The
// destructor waits for a gather in flight (bounded by the gather's timeout).
// Threads: one caller thread; one helper thread at a time.
#pragma once

#include <future>
#include <optional>
#include <vector>

#include "gossip/schedule/controller.h"
#include "peer/api/scalar_gather.h"

namespace murmur::peer {

class ScheduleAgreement {
 public:
  // `gather` must outlive this object and be used by nothing else.
  explicit ScheduleAgreement(ScalarGather& gather) : gather_(gather) {}
  ~ScheduleAgreement();
  ScheduleAgreement(const ScheduleAgreement&) = delete;
  ScheduleAgreement& operator=(const ScheduleAgreement&) = delete;

  std::vector<gossip::schedule::ScheduleProposal> operator()(const gossip::schedule::ScheduleProposal& mine);

 private:
  std::vector<gossip::schedule::ScheduleProposal> gather_now(const gossip::schedule::ScheduleProposal& mine,
                                                             const gossip::View& view);

  ScalarGather& gather_;
  std::optional<std::vector<gossip::schedule::ScheduleProposal>> first_;  // decision 0's, until decision 1
  std::future<std::vector<gossip::schedule::ScheduleProposal>> in_flight_;
};

}  // namespace murmur::peer
