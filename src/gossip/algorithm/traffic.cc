#include "gossip/algorithm/traffic.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "common/check.h"
#include "common/log.h"
#include "gossip/algorithm/receipt.h"

namespace murmur::gossip::detail {
namespace {

// With the counters' mutex held.
void add_locked(std::map<int, LinkStats>& links, const fabric::Request& done) {
  auto& l = links[done.peer()];
  if (done.kind() == fabric::Request::Kind::kSend) {
    l.bytes_sent += done.bytes();
    ++l.messages_sent;
  } else {
    l.bytes_received += done.bytes();
    ++l.messages_received;
  }
}

// From an on_done callback, where the outcome is known (request.h).
void add(std::mutex& mutex, std::map<int, LinkStats>& links, const fabric::Request& done) {
  if (done.error()) return;
  std::lock_guard lock(mutex);
  add_locked(links, done);
}

}  // namespace

// A send whose sample waits for its receipt. Shared by the send's and the
// receipt's callbacks, in whichever order they run, and retained by the
// receipt's request (its buffer is the receive's). Guarded by
// Counters::mutex.
struct Traffic::PendingSend {
  int peer = -1;
  fabric::Tag tag = 0;
  // Larger than a receipt, so that a slightly longer message is read and
  // reported as malformed instead of failing the receive.
  std::array<std::byte, 64> buffer{};
  std::optional<TransferSample> sample;  // once the send completed
  bool receipt_done = false;
  bool receipt_failed = false;
  double receiver_seconds = -1;
};

Traffic::~Traffic() {
  std::lock_guard lock(counters_->mutex);
  counters_->clock = nullptr;
}

void Traffic::push_sample(Counters& c, const TransferSample& s) {
  c.sends.push_back(s);
  if (c.sends.size() > kMaxSendSamples) c.sends.pop_front();
}

void Traffic::release(Counters& c, PendingSend& p) {
  if (!p.sample || !p.receipt_done || p.receipt_failed || c.clock == nullptr) return;
  TransferSample s = *p.sample;
  s.receiver_seconds = p.receiver_seconds;
  push_sample(c, s);
  p.sample.reset();
}

std::shared_ptr<Traffic::PendingSend> Traffic::expect_receipt(int peer, fabric::Tag tag) {
  bool full = false, warn = false;
  {
    std::lock_guard lock(counters_->mutex);
    auto& awaited = counters_->receipts_awaited[peer];
    full = awaited >= kMaxPendingReceipts;
    if (full) {
      warn = counters_->warned.insert(peer).second;
    } else {
      ++awaited;
    }
  }
  if (warn)
    gossip_log().warn(
        "rank {} ({}) has not answered {} messages with receipts; timing its sends to it without them "
        "(does its schedule set receipts = 0?)",
        peer, comm_.host(peer), kMaxPendingReceipts);
  if (full) return nullptr;
  auto pending = std::make_shared<PendingSend>();
  pending->peer = peer;
  pending->tag = tag;
  auto request = comm_.irecv(peer, receipt_tag(tag), std::span<std::byte>(pending->buffer));
  request->retain(pending);
  request->on_done([c = counters_, pending](fabric::Request& done) {
    const bool failed = done.error() != nullptr;
    std::string warning;
    {
      std::lock_guard lock(c->mutex);
      --c->receipts_awaited[pending->peer];
      pending->receipt_done = true;
      pending->receipt_failed = failed;
      if (!failed) {
        add_locked(c->links, done);
        std::string why;
        const auto seconds =
            decode_receipt(std::span<const std::byte>(pending->buffer.data(), done.bytes()), pending->tag, why);
        if (seconds) {
          pending->receiver_seconds = *seconds;
        } else if (c->clock != nullptr && c->warned.insert(pending->peer).second) {
          warning = "malformed receipt from rank " + std::to_string(pending->peer) + " (" +
                    c->clock->host(pending->peer) + "): " + why +
                    "; its sends are timed without receipts (logged once per peer)";
        }
        release(*c, *pending);
      }
    }
    if (!warning.empty()) gossip_log().warn("{}", warning);
  });
  return pending;
}

fabric::RequestPtr Traffic::send_bytes(int peer, fabric::Tag tag, std::span<const std::byte> data,
                                       std::shared_ptr<const void> owner) {
  MURMUR_CHECK(owner != nullptr);
  std::shared_ptr<PendingSend> pending;
  if (receipts_ && !is_receipt_tag(tag)) pending = expect_receipt(peer, tag);
  const double posted = comm_.now();
  auto request = comm_.isend(peer, tag, data);
  request->retain(std::move(owner));
  request->on_done([c = counters_, posted, pending](fabric::Request& done) {
    if (done.error()) return;
    std::lock_guard lock(c->mutex);
    if (c->clock == nullptr) return;
    // now() takes no lock (FabricCommunicator: steady_clock; the simulator:
    // its virtual clock, read under its baton), so the leaf order holds.
    const double now = c->clock->now();
    const TransferSample s{done.peer(), static_cast<double>(done.bytes()), now - posted, now};
    if (!pending) {
      push_sample(*c, s);
      return;
    }
    pending->sample = s;
    release(*c, *pending);
  });
  return request;
}

std::vector<TransferSample> Traffic::take_send_samples() {
  std::lock_guard lock(counters_->mutex);
  std::vector<TransferSample> out(counters_->sends.begin(), counters_->sends.end());
  counters_->sends.clear();
  return out;
}

fabric::RequestPtr Traffic::recv_bytes(int peer, fabric::Tag tag, std::span<std::byte> buffer,
                                       std::shared_ptr<const void> owner) {
  MURMUR_CHECK(owner != nullptr);
  const double posted = comm_.now();
  auto request = comm_.irecv(peer, tag, buffer);
  request->retain(std::move(owner));
  if (!receipts_) return request;
  {
    std::lock_guard lock(counters_->mutex);
    counters_->receives[request.get()] = ReceiveTiming{posted, -1};
  }
  // Registered after the entry exists: a receive that completed inside
  // irecv() runs this at once, here.
  request->on_done([c = counters_](fabric::Request& done) {
    std::lock_guard lock(c->mutex);
    auto it = c->receives.find(&done);
    if (it == c->receives.end()) return;
    if (done.error() || c->clock == nullptr) {
      c->receives.erase(it);
      return;
    }
    it->second.done = c->clock->now();
  });
  return request;
}

void Traffic::send_receipts(const std::vector<fabric::RequestPtr>& receives) {
  const double now = comm_.now();
  for (const auto& r : receives) {
    double seconds = 0;
    {
      std::lock_guard lock(counters_->mutex);
      auto it = counters_->receives.find(r.get());
      if (it == counters_->receives.end()) continue;
      if (!r->test() || r->error()) continue;  // after a failed wait: only the receives that arrived
      // A done receive's on_done callback has run (request.h), so `done`
      // is set; `now` stands in only if the Traffic's clock was gone then.
      seconds = std::max(0.0, (it->second.done >= 0 ? it->second.done : now) - it->second.posted);
      counters_->receives.erase(it);
    }
    auto receipt = std::make_shared<ReceiptBuffer>(encode_receipt(r->tag(), seconds));
    auto request = comm_.isend(r->peer(), receipt_tag(r->tag()), std::span<const std::byte>(*receipt));
    // Nobody waits for a receipt; the request owns its buffer.
    request->retain(std::move(receipt));
    request->on_done([c = counters_](fabric::Request& done) { add(c->mutex, c->links, done); });
  }
}

void Traffic::wait_all(const std::vector<fabric::RequestPtr>& requests, double timeout_s) {
  if (!receipts_) {
    comm_.wait_all(requests, timeout_s);
  } else {
    // Receives first, so that their receipts leave while this rank's own
    // sends may still be crossing a slow link; both waits share one
    // deadline, timeout_s from now.
    std::vector<fabric::RequestPtr> receives, others;
    for (const auto& r : requests) (r->kind() == fabric::Request::Kind::kRecv ? receives : others).push_back(r);
    const double start = comm_.now();
    std::exception_ptr error;
    try {
      comm_.wait_all(receives, timeout_s);
    } catch (...) {
      error = std::current_exception();
    }
    // Every receive that arrived is answered, even in a failed round: its
    // sender waits for the receipt.
    send_receipts(receives);
    // Waited for even after a failure: no buffer may stay in use.
    try {
      comm_.wait_all(others, std::max(0.0, timeout_s - (comm_.now() - start)));
    } catch (...) {
      if (!error) error = std::current_exception();
    }
    if (error) std::rethrow_exception(error);
  }
  for (const auto& r : requests) count(*r);
}

std::set<int> Traffic::wait_all_excusing(const std::vector<fabric::RequestPtr>& requests, double timeout_s,
                                         bool tolerate) {
  if (!tolerate) {
    wait_all(requests, timeout_s);
    return {};
  }
  try {
    wait_all(requests, timeout_s);
    return {};
  } catch (const fabric::PeerError&) {
    // Settled: Communicator::wait_all throws only once every request has.
  }
  std::set<int> failed;
  for (const auto& r : requests) {
    if (r->error()) {
      failed.insert(r->peer());
    } else {
      count(*r);
    }
  }
  return failed;
}

void Traffic::count(const fabric::Request& done) {
  if (done.test()) add(counters_->mutex, counters_->links, done);
}

void Traffic::count_on_done(const fabric::RequestPtr& request) {
  request->on_done([c = counters_](fabric::Request& done) { add(c->mutex, c->links, done); });
}

std::map<int, LinkStats> Traffic::links() const {
  std::lock_guard lock(counters_->mutex);
  return counters_->links;
}

}  // namespace murmur::gossip::detail
