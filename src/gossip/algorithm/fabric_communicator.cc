#include "gossip/algorithm/fabric_communicator.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include "common/trace.h"
#include "fabric/errors.h"

namespace murmur::gossip {
namespace {

// A message on the timeline, from its post to its completion (on whichever
// thread completes it): the neighbour, the bytes and the tag, which the
// other side's record of the same message shares.
// `posted` is read before the post: a provider may deliver a small message
// inside the post call, and the receiver's record must not end before the
// sender's began.
void trace_message(fabric::Request& request, trace::Category category, std::int64_t posted) {
  request.on_done([posted, category](fabric::Request& done) {
    trace::message(category, posted, trace::now_ns(),
                   {.peer = done.peer(),
                    .bytes = done.error() ? -1 : static_cast<std::int64_t>(done.bytes()),
                    .tag = done.tag(),
                    .detail = done.error() ? "failed" : ""});
  });
}

}  // namespace

FabricCommunicator::FabricCommunicator(fabric::Transport& transport, std::vector<fabric::PeerInfo> peers)
    : transport_(transport), peers_(std::move(peers)) {}

int FabricCommunicator::rank() const { return transport_.rank(); }
int FabricCommunicator::size() const { return transport_.size(); }

std::string FabricCommunicator::host(int peer) const {
  if (peer >= 0 && peer < static_cast<int>(peers_.size())) return peers_[peer].host;
  return "?";
}

fabric::RequestPtr FabricCommunicator::isendv(int peer, fabric::Tag tag, fabric::SendPieces pieces) {
  const std::int64_t posted = trace::enabled() ? trace::now_ns() : -1;
  auto request = transport_.isendv(peer, tag, std::move(pieces));
  if (posted >= 0) trace_message(*request, trace::Category::kSend, posted);
  return request;
}

fabric::RequestPtr FabricCommunicator::irecv(int peer, fabric::Tag tag, std::span<std::byte> buffer) {
  const std::int64_t posted = trace::enabled() ? trace::now_ns() : -1;
  auto request = transport_.irecv(peer, tag, buffer.data(), buffer.size());
  if (posted >= 0) trace_message(*request, trace::Category::kRecv, posted);
  return request;
}

void FabricCommunicator::set_failure_detector(FailureDetector detector) { detector_ = std::move(detector); }

void FabricCommunicator::wait_all(std::span<const fabric::RequestPtr> requests, double timeout_s) {
  if (requests.empty()) return;
  trace::Scope span(trace::Category::kWait, "wait_messages");
  span.args().detail = trace::enabled() ? std::to_string(requests.size()) + " requests" : std::string();
  if (detector_.deadline != nullptr) return wait_detecting(requests, timeout_s);
  auto deadline = fabric::Clock::now() +
                  std::chrono::duration_cast<fabric::Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::exception_ptr error;
  try {
    if (fabric::wait_all(requests, deadline)) return;
  } catch (...) {
    // fabric::wait_all rethrows a failure even when other requests are still
    // pending at the deadline; those are released below before unwinding.
    error = std::current_exception();
  }
  fail_stalled(requests, timeout_s, error);
}

// Stalled past the ceiling: fail the pending peers so that every request
// settles, then throw.
void FabricCommunicator::fail_stalled(std::span<const fabric::RequestPtr> requests, double timeout_s,
                                      std::exception_ptr error) {
  fail_stalled_peers(*this, requests, timeout_s,
                     [this](int peer, std::exception_ptr e) { transport_.fail_peer(peer, std::move(e)); });
  std::exception_ptr later;
  try {
    // Backends fail pending requests of a failed peer promptly; bound it anyway.
    if (!fabric::wait_all(requests, fabric::Clock::now() + std::chrono::seconds(30)))
      throw fabric::FabricError("gossip: requests still pending 30 s after their peers were declared failed");
  } catch (...) {
    later = std::current_exception();
  }
  if (error) std::rethrow_exception(error);
  if (later) std::rethrow_exception(later);
  // Every request completed without error after all (a completion raced the
  // deadline): the round is whole.
}

void FabricCommunicator::wait_detecting(std::span<const fabric::RequestPtr> requests, double timeout_s) {
  using Seconds = std::chrono::duration<double>;
  const auto start = fabric::Clock::now();
  const auto ceiling = start + std::chrono::duration_cast<fabric::Clock::duration>(Seconds(timeout_s));
  std::set<int> reported;  // failed links, told once per wait
  for (;;) {
    const double deadline_s = detector_.deadline->deadline_s();
    const auto until = std::min(
        ceiling, fabric::Clock::now() + std::chrono::duration_cast<fabric::Clock::duration>(Seconds(deadline_s)));
    std::exception_ptr error;
    bool settled = false;
    try {
      settled = fabric::wait_all(requests, until);
    } catch (...) {
      error = std::current_exception();
      settled = std::all_of(requests.begin(), requests.end(), [](const auto& r) { return r->test(); });
    }
    for (const auto& r : requests) {
      if (!r->test() || !r->error() || !reported.insert(r->peer()).second) continue;
      std::string why = "its link failed";
      try {
        std::rethrow_exception(r->error());
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (detector_.suspect) detector_.suspect(r->peer(), /*silent=*/false, why);
    }
    if (settled) {
      if (error) std::rethrow_exception(error);
      detector_.deadline->observe(Seconds(fabric::Clock::now() - start).count());
      return;
    }
    if (fabric::Clock::now() >= ceiling) return fail_stalled(requests, timeout_s, error);
    std::set<int> silent;
    for (const auto& r : requests)
      if (!r->test()) silent.insert(r->peer());
    for (int peer : silent) {
      std::ostringstream why;
      why << "no completion for " << Seconds(fabric::Clock::now() - start).count() << " s (deadline " << deadline_s
          << " s, from observed round times)";
      if (detector_.suspect) detector_.suspect(peer, /*silent=*/true, why.str());
    }
  }
}

double FabricCommunicator::now() const {
  return std::chrono::duration<double>(fabric::Clock::now().time_since_epoch()).count();
}

}  // namespace murmur::gossip
