#include "peer/api/schedule_agreement.h"

#include <algorithm>
#include <exception>
#include <span>

#include "common/background_thread.h"
#include "common/log.h"

namespace murmur::peer {

using gossip::schedule::ScheduleProposal;

ScheduleAgreement::~ScheduleAgreement() {
  if (!in_flight_.valid()) return;
  try {
    in_flight_.get();
  } catch (const std::exception& e) {
    peer_log().warn("the schedule's last agreement did not complete: {}", e.what());
  }
}

std::vector<ScheduleProposal> ScheduleAgreement::gather_now(const ScheduleProposal& mine, const gossip::View& view) {
  const double values[] = {static_cast<double>(mine.period), mine.consensus, mine.least_aggressive ? 1.0 : 0.0};
  std::vector<ScheduleProposal> all;
  for (const auto& v : gather_.gather(std::span<const double>(values), "the schedule's agreement", view).values)
    all.push_back({static_cast<int>(std::clamp(v[0], 1.0, 1e6)), v[1], v[2] != 0});
  return all;
}

std::vector<ScheduleProposal> ScheduleAgreement::operator()(const ScheduleProposal& mine) {
  if (!first_ && !in_flight_.valid()) {
    // Decision 0: nothing earlier to use, so it blocks once.
    first_ = gather_now(mine, gather_.start_view());
    return *first_;
  }
  std::vector<ScheduleProposal> previous;
  if (first_) {
    previous = std::move(*first_);
    first_.reset();
  } else {
    previous = in_flight_.get();  // rethrows a failure of the background gather
  }
  // The view is taken here, on the caller's thread at this decision's step,
  // where it is the same on every member (scalar_gather.h).
  const AsyncSignalsBlocked blocked;  // the gather's thread is murmur's (common/background_thread.h)
  in_flight_ =
      std::async(std::launch::async, [this, mine, view = gather_.start_view()] { return gather_now(mine, view); });
  return previous;
}

}  // namespace murmur::peer
