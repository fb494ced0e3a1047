#include "gossip/algorithm/message_allgather.h"

namespace murmur::gossip::detail {

bool allgather_messages(Traffic& traffic, std::span<const int> members, int self, fabric::Tag tag, std::size_t capacity,
                        std::vector<MessageBuffer<std::byte>>& inbox, const RingWait& wait) {
  std::vector<fabric::RequestPtr> requests;
  std::vector<int> from;
  // TODO(perf): a ring or recursive-doubling all-gather of the variable
  // sized messages for large p; direct sends are fine at tens of ranks.
  for (int k : members) {
    if (k == self) continue;
    inbox[k].fresh().resize(capacity);
    requests.push_back(traffic.recv(k, tag, inbox[k]));
    from.push_back(k);
  }
  for (int k : members)
    if (k != self) requests.push_back(traffic.send(k, tag, inbox[self]));
  const bool complete = wait(requests).empty();
  for (std::size_t i = 0; i < from.size(); ++i) inbox[from[i]]->resize(requests[i]->error() ? 0 : requests[i]->bytes());
  return complete;
}

}  // namespace murmur::gossip::detail
