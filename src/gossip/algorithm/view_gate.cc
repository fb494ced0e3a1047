#include "gossip/algorithm/view_gate.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>

#include "common/background_thread.h"
#include "common/log.h"

namespace murmur::gossip {

ViewGate::ViewGate(View initial, int self, Agree agree, Prepare prepare)
    : self_(self), agree_(std::move(agree)), prepare_(std::move(prepare)), current_(std::move(initial)) {
  newest_known_ = current_.generation;
  committed_generation_ = current_.generation;
  joining_ = !current_.contains(self_);
  thread_ = start_background_thread([this] { run(); });
}

ViewGate::~ViewGate() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ViewGate::propose(View next, std::string reason) {
  {
    std::lock_guard lock(mutex_);
    if (next.generation <= newest_known_) return;
    newest_known_ = next.generation;
    if (!next.contains(self_) && !joining_) {
      expelled_ = "this member (rank " + std::to_string(self_) + ") is not in the job's membership view " +
                  std::to_string(next.generation) + (reason.empty() ? "" : ": " + reason) +
                  "; the others declared it lost (stopped or unreachable for too long) and go on without it";
    } else {
      proposals_.push_back(std::move(next));
    }
  }
  cv_.notify_all();
}

// A proposal is superseded when a newer one drops one of its members: that
// member may never report, so waiting for it could last forever.
bool ViewGate::superseded(const View& proposed) const {
  if (stop_ || !expelled_.empty()) return true;
  for (const View& later : proposals_) {
    if (later.generation <= proposed.generation) continue;
    for (int m : proposed.members)
      if (!later.contains(m)) return true;
  }
  return false;
}

void ViewGate::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || failed_ || !proposals_.empty(); });
    if (stop_ || failed_) return;
    View proposed = proposals_.front();
    // The report: the first round this member could switch at, two after
    // the last round it started (and not before the last view's), with the
    // promise to start at most one more until the view is committed
    // (view_gate.h).
    const std::uint64_t report = std::max(started_any_ ? started_ + 2 : 2, last_first_round_);
    reporting_ = true;
    limit_ = started_any_ ? started_ + 1 : 1;
    lock.unlock();
    std::optional<std::vector<std::uint64_t>> reports;
    std::exception_ptr error;
    try {
      reports = agree_(proposed, report, [this, &proposed] {
        std::lock_guard guard(mutex_);
        return superseded(proposed);
      });
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    proposals_.pop_front();
    if (error) {
      failed_ = error;
    } else if (reports) {
      std::uint64_t most = 0;
      for (std::uint64_t r : *reports) most = std::max(most, r);
      last_first_round_ = std::max(last_first_round_, most);
      committed_generation_ = proposed.generation;
      gossip_log().info("membership view {} ({} members) agreed: it takes effect at round {}", proposed.generation,
                        proposed.size(), last_first_round_);
      commits_.push_back({std::move(proposed), last_first_round_});
    } else {
      gossip_log().info("membership view {} abandoned for a later one", proposed.generation);
    }
    reporting_ = !proposals_.empty();
    cv_.notify_all();
  }
}

std::optional<ViewChange> ViewGate::before(std::uint64_t counter) {
  std::unique_lock lock(mutex_);
  std::optional<View> adopt;
  const auto entered = std::chrono::steady_clock::now();
  bool waited = false;
  for (;;) {
    if (failed_) std::rethrow_exception(failed_);
    if (!expelled_.empty()) throw std::runtime_error(expelled_);
    if (stop_) throw std::runtime_error("membership: the view gate was stopped");
    // A joining member enters at the first round of the view that admits it,
    // and adopts with it every later view that takes effect at that round
    // (two joiners admitted in quick succession: the members switch to the
    // second view at once).
    while (!commits_.empty() && (commits_.front().first_round <= counter || joining_)) {
      if (joining_ && commits_.front().view.contains(self_)) {
        counter = std::max(counter, commits_.front().first_round);
        joining_ = false;
      }
      adopt = std::move(commits_.front().view);
      commits_.pop_front();
    }
    if (joining_) {
      cv_.wait(lock);
      continue;
    }
    // A report is out: at most limit_ may start before its view is agreed.
    if (reporting_ && counter > limit_) {
      waited = true;
      cv_.wait(lock);
      continue;
    }
    break;
  }
  if (waited) blocked_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - entered).count();
  started_ = counter;
  started_any_ = true;
  if (!adopt) return std::nullopt;
  const View from = current_;
  lock.unlock();
  ViewChange change = prepare_(from, *adopt);
  change.first_round = counter;
  lock.lock();
  current_ = change.view;
  return change;
}

View ViewGate::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

std::uint64_t ViewGate::committed() const {
  std::lock_guard lock(mutex_);
  return committed_generation_;
}

double ViewGate::blocked_seconds() const {
  std::lock_guard lock(mutex_);
  return blocked_seconds_;
}

}  // namespace murmur::gossip
