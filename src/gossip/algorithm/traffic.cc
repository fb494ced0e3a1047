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

fabric::RequestPtr Traffic::send(int peer, fabric::Tag tag, std::span<const std::byte> data) {
  return comm_.isend(peer, tag, data);
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
