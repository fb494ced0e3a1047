// bytescheduler-a2a and bytescheduler-ps (Peng et al., "A Generic
// Communication Scheduler for Distributed DNN Training Acceleration", SOSP
// 2019; the survey's ByteScheduler-A2A and ByteScheduler-PS): every layer's
// gradient is cut into partitions of at most `bytescheduler_partition`
// floats, and partitions are averaged by priority (all-reduced, or pushed to
// their parameter servers and pulled: ps_exchange.h, one server per
// partition by size), front layers first (the next forward pass needs them first),
// with at most `bytescheduler_credit` floats on the wire at a time (the
// credit window). Defaults are ByteScheduler's own (ByteCore: partition
// 1,000,000 parameters, credit 4,000,000), which it then auto-tunes; here
// they are knobs (--bytescheduler-partition, --bytescheduler-credit).
//
// All-reduces pair up (and servers serve what workers push) only if every
// rank runs the same partitions in the same order, and which partitions are ready when the link frees up is a
// matter of timing. So the view's first member (the leader) chooses: when
// a window ends it takes the ready partitions of highest priority up to
// the credit (at least one), sends their numbers to every member, and all
// run them as concurrent rings (ring_allreduce.h); the others wait for the
// chosen layers to be handed over. One small message per window is the
// price of the agreement (Horovod negotiates the same way).
//
// Each layer is marked averaged when its last partition is, so that a
// caller with the layer-wise step (murmur-peer --layerwise-update,
// Peer::wait_layer_averaged) starts the next forward pass on the front
// layers while back layers still communicate: ByteScheduler's
// cross-iteration gain. Without it, priority reorders communication within
// the backward pass only.
//
// Simplification, stated: the window is refilled when it empties, not
// partition by partition (ByteScheduler's credit is a sliding window).
//
// A lost leader aborts the round's remaining windows on the ranks that see
// it (they keep their local gradient); the view without it has a new
// leader.
#include <stdexcept>
#include <vector>

#include "gossip/algorithm/gradient_algorithm.h"

namespace murmur::gossip::detail {
namespace {

struct Partition {
  std::size_t layer = 0;
  std::span<float> values;
};

class ByteScheduler final : public GradientAlgorithm {
 public:
  ByteScheduler(std::string name, const AlgorithmOptions& o, Communicator& comm, Exchange exchange)
      : GradientAlgorithm(std::move(name), o, comm, exchange),
        partition_floats_(checked(this->name(), o.bytescheduler_partition, "--bytescheduler-partition")),
        credit_floats_(checked(this->name(), o.bytescheduler_credit, "--bytescheduler-credit")) {}
  ~ByteScheduler() override { shutdown(); }

 private:
  static std::size_t checked(const std::string& name, std::int64_t value, const char* flag) {
    if (value < 1)
      throw std::invalid_argument(name + ": " + flag + " " + std::to_string(value) + " must be >= 1 (floats)");
    return static_cast<std::size_t>(value);
  }

  // The parameter servers shard partitions, not layers.
  std::vector<std::size_t> tensor_sizes() const override {
    std::vector<std::size_t> sizes;
    for (const Partition& p : partitions_) sizes.push_back(p.values.size());
    return sizes;
  }

  // Front layer first: partition numbers are priorities.
  void cut_partitions() {
    for (std::size_t l = 0; l < layers(); ++l) {
      const std::span<float> layer = layer_span(l);
      for (std::size_t at = 0; at < layer.size(); at += partition_floats_)
        partitions_.push_back({l, layer.subspan(at, std::min(partition_floats_, layer.size() - at))});
    }
  }

  void communicate(std::uint64_t round) override {
    if (partitions_.empty()) cut_partitions();
    std::vector<std::size_t> left(layers(), 0);
    for (const Partition& p : partitions_) ++left[p.layer];
    std::vector<bool> done(partitions_.size(), false);
    std::size_t remaining = partitions_.size();
    const bool leader = members_.front() == rank();
    for (std::uint32_t window = 0; remaining > 0; ++window) {
      std::vector<std::uint32_t> chosen;
      if (leader) {
        chosen = choose(left, done);
        announce(round, window, chosen);
      } else if (!receive_choice(round, window, done, chosen)) {
        return;  // the leader was lost: the rest keeps the local gradient
      }
      std::vector<std::span<float>> pieces;
      for (std::uint32_t id : chosen) {
        wait_ready(partitions_[id].layer);
        pieces.push_back(partitions_[id].values);
      }
      average(round, pieces, chosen);
      for (std::uint32_t id : chosen) {
        done[id] = true;
        --remaining;
        // A layer's last partition: the layer-wise step may update it now.
        if (--left[partitions_[id].layer] == 0) mark_averaged(partitions_[id].layer);
      }
    }
  }

  // Leader: the ready partitions of highest priority (lowest number), up
  // to the credit, at least one; blocks until one is ready.
  std::vector<std::uint32_t> choose(const std::vector<std::size_t>& left, const std::vector<bool>& done) {
    std::vector<bool> exhausted(layers());
    for (std::size_t l = 0; l < layers(); ++l) exhausted[l] = left[l] == 0;
    const std::vector<std::size_t> ready = wait_more_ready(exhausted);
    std::vector<bool> is_ready(layers(), false);
    for (std::size_t l : ready) is_ready[l] = true;
    std::vector<std::uint32_t> chosen;
    std::size_t floats = 0;
    for (std::uint32_t id = 0; id < partitions_.size(); ++id) {
      const Partition& p = partitions_[id];
      if (done[id] || !is_ready[p.layer]) continue;
      if (!chosen.empty() && floats + p.values.size() > credit_floats_) break;
      chosen.push_back(id);
      floats += p.values.size();
    }
    return chosen;
  }

  // Leader: the choice to every other member (a lost one is excused; the
  // rings then abort where they must).
  void announce(std::uint64_t round, std::uint32_t window, const std::vector<std::uint32_t>& chosen) {
    MessageBuffer<std::uint32_t> message;
    message.fresh() = chosen;
    std::vector<fabric::RequestPtr> requests;
    for (int k : members_)
      if (k != rank()) requests.push_back(traffic_.send(k, task_tag(Phase::kGradientOrder, round, window), message));
    wait_excusing(requests);
  }

  // The others: the leader's choice, checked. False: the leader was lost.
  bool receive_choice(std::uint64_t round, std::uint32_t window, const std::vector<bool>& done,
                      std::vector<std::uint32_t>& chosen) {
    const int leader = members_.front();
    MessageBuffer<std::uint32_t> message;
    message.fresh().resize(partitions_.size());
    std::vector<fabric::RequestPtr> requests{
        traffic_.recv(leader, task_tag(Phase::kGradientOrder, round, window), message)};
    wait_excusing(requests);
    if (requests[0]->error()) return false;
    const std::size_t count = requests[0]->bytes() / sizeof(std::uint32_t);
    chosen.assign(message->begin(), message->begin() + static_cast<std::ptrdiff_t>(count));
    for (std::uint32_t id : chosen)
      if (id >= partitions_.size() || done[id])
        throw std::invalid_argument(name() + ": leader rank " + std::to_string(leader) + " (" + comm_.host(leader) +
                                    ") chose partition " + std::to_string(id) + " of " +
                                    std::to_string(partitions_.size()) +
                                    ", which this rank does not have or has done: do all ranks use the same model, "
                                    "--bytescheduler-partition and --bytescheduler-credit?");
    if (count == 0)
      throw std::invalid_argument(name() + ": leader rank " + std::to_string(leader) + " (" + comm_.host(leader) +
                                  ") chose no partition");
    return true;
  }

  const std::size_t partition_floats_, credit_floats_;
  std::vector<Partition> partitions_;  // communication thread only, cut at the first round
};

}  // namespace

std::unique_ptr<Algorithm> make_bytescheduler_a2a(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<ByteScheduler>("bytescheduler-a2a", o, comm, Exchange::kRing);
}

std::unique_ptr<Algorithm> make_bytescheduler_ps(const AlgorithmOptions& o, Communicator& comm) {
  return std::make_unique<ByteScheduler>("bytescheduler-ps", o, comm, Exchange::kParameterServer);
}

}  // namespace murmur::gossip::detail
