#include "gossip/algorithm/ring_allreduce.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/check.h"

namespace murmur::gossip::detail {
namespace {

// One tensor's state in the ring: its working copy and the receive buffer.
struct RingSlot {
  MessageBuffer<float> work, incoming;
  std::size_t size = 0;
  std::size_t offset(int chunk, int p) const { return static_cast<std::size_t>(chunk) * size / p; }
};

void check_received(const fabric::Request& r, std::size_t floats, Communicator& comm) {
  if (r.bytes() != floats * sizeof(float))
    throw std::invalid_argument("gradient all-reduce: rank " + std::to_string(r.peer()) + " (" + comm.host(r.peer()) +
                                ") sent " + std::to_string(r.bytes()) + " bytes, expected " +
                                std::to_string(floats * sizeof(float)) +
                                ": gradient layouts differ across ranks (the same model on every rank?)");
}

}  // namespace

bool ring_allreduce_sum(Traffic& traffic, std::span<const int> members, int self, std::span<const RingTensor> tensors,
                        const RingWait& wait, bool tolerate) {
  const int p = static_cast<int>(members.size());
  const auto at = std::find(members.begin(), members.end(), self);
  MURMUR_CHECK(at != members.end());
  if (p < 2 || tensors.empty()) return true;
  const int r = static_cast<int>(at - members.begin());
  const int left = members[(r + p - 1) % p];
  const int right = members[(r + 1) % p];
  auto mod = [p](int x) { return ((x % p) + p) % p; };

  std::vector<RingSlot> slots(tensors.size());
  for (std::size_t j = 0; j < tensors.size(); ++j) {
    slots[j].size = tensors[j].data.size();
    slots[j].work.fresh().assign(tensors[j].data.begin(), tensors[j].data.end());
  }
  bool aborted = false;
  // One ring step of every tensor: send chunk `out_chunk`, receive chunk
  // `in_chunk` (into `incoming`, or straight into `work` when gathering).
  auto ring_step = [&](int out_chunk, int in_chunk, bool gather) {
    std::vector<fabric::RequestPtr> requests;
    std::vector<std::span<float>> ins;
    for (std::size_t j = 0; j < tensors.size(); ++j) {
      RingSlot& s = slots[j];
      const std::size_t in_begin = s.offset(in_chunk, p), in_end = s.offset(in_chunk + 1, p);
      const std::size_t out_begin = s.offset(out_chunk, p), out_end = s.offset(out_chunk + 1, p);
      std::span<float> in;
      const fabric::Tag tag = gather ? tensors[j].gather_tag : tensors[j].reduce_tag;
      if (gather) {
        in = s.work.span().subspan(in_begin, in_end - in_begin);
        requests.push_back(traffic.recv(left, tag, s.work, in));
      } else {
        s.incoming.fresh().resize(in_end - in_begin);
        in = s.incoming.span();
        requests.push_back(traffic.recv(left, tag, s.incoming, in));
      }
      const std::span<const float> out =
          aborted ? std::span<const float>() : std::span<const float>(s.work->data() + out_begin, out_end - out_begin);
      requests.push_back(traffic.send(right, tag, s.work, out));
      ins.push_back(in);
    }
    wait(requests);
    for (std::size_t j = 0; j < tensors.size(); ++j) {
      const auto& recv = requests[2 * j];
      const auto& send = requests[2 * j + 1];
      if (recv->error() || send->error()) {
        aborted = true;
        continue;
      }
      if (recv->bytes() == 0 && !ins[j].empty() && tolerate) {
        aborted = true;  // the left aborted
        continue;
      }
      if (!aborted) check_received(*recv, ins[j].size(), traffic.comm());
    }
    if (aborted || gather) return;
    for (std::size_t j = 0; j < tensors.size(); ++j) {
      RingSlot& s = slots[j];
      float* into = s.work->data() + s.offset(in_chunk, p);
      const std::vector<float>& got = *s.incoming;
      for (std::size_t i = 0; i < got.size(); ++i) into[i] += got[i];
    }
  };
  for (int s = 0; s < p - 1; ++s) ring_step(mod(r - s), mod(r - s - 1), /*gather=*/false);
  for (int s = 0; s < p - 1; ++s) ring_step(mod(r + 1 - s), mod(r - s), /*gather=*/true);
  if (aborted) return false;
  for (std::size_t j = 0; j < tensors.size(); ++j)
    std::copy(slots[j].work->begin(), slots[j].work->end(), tensors[j].data.begin());
  return true;
}

}  // namespace murmur::gossip::detail
