#include "gossip/algorithm/traffic.h"

namespace murmur::gossip::detail {
namespace {

void add(std::mutex& mutex, std::map<int, LinkStats>& links, const fabric::Request& done) {
  if (!done.test() || done.error()) return;
  std::lock_guard lock(mutex);
  auto& l = links[done.peer()];
  if (done.kind() == fabric::Request::Kind::kSend) {
    l.bytes_sent += done.bytes();
    ++l.messages_sent;
  } else {
    l.bytes_received += done.bytes();
    ++l.messages_received;
  }
}

}  // namespace

Traffic::~Traffic() {
  std::lock_guard lock(counters_->mutex);
  counters_->clock = nullptr;
}

fabric::RequestPtr Traffic::send(int peer, fabric::Tag tag, std::span<const std::byte> data) {
  const double posted = comm_.now();
  auto request = comm_.isend(peer, tag, data);
  request->on_done([c = counters_, posted](fabric::Request& done) {
    if (!done.test() || done.error()) return;
    std::lock_guard lock(c->mutex);
    if (c->clock == nullptr) return;
    // now() takes no lock (FabricCommunicator: steady_clock; the simulator:
    // its virtual clock, read under its baton), so the leaf order holds.
    const double now = c->clock->now();
    c->sends.push_back(TransferSample{done.peer(), static_cast<double>(done.bytes()), now - posted, now});
    if (c->sends.size() > kMaxSendSamples) c->sends.pop_front();
  });
  return request;
}

std::vector<TransferSample> Traffic::take_send_samples() {
  std::lock_guard lock(counters_->mutex);
  std::vector<TransferSample> out(counters_->sends.begin(), counters_->sends.end());
  counters_->sends.clear();
  return out;
}

fabric::RequestPtr Traffic::recv(int peer, fabric::Tag tag, std::span<std::byte> buffer) {
  return comm_.irecv(peer, tag, buffer);
}

void Traffic::wait_all(const std::vector<fabric::RequestPtr>& requests, double timeout_s) {
  comm_.wait_all(requests, timeout_s);
  for (const auto& r : requests) count(*r);
}

void Traffic::count(const fabric::Request& done) { add(counters_->mutex, counters_->links, done); }

void Traffic::count_on_done(const fabric::RequestPtr& request) {
  request->on_done([c = counters_](fabric::Request& done) { add(c->mutex, c->links, done); });
}

std::map<int, LinkStats> Traffic::links() const {
  std::lock_guard lock(counters_->mutex);
  return counters_->links;
}

}  // namespace murmur::gossip::detail
