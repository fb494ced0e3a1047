#include "fabric/shaper/shaped_transport.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "common/background_thread.h"
#include "common/check.h"
#include "common/log.h"
#include "common/trace.h"
#include "fabric/errors.h"
#include "fabric/peer_list.h"

namespace murmur::fabric::shaper {
namespace {

// splitmix64: spreads (seed, rank) so peers with one seed jitter differently.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class ShapedTransportImpl final : public ShapedTransport {
 public:
  ShapedTransportImpl(std::unique_ptr<Transport> inner, ShaperConfig config, std::uint64_t seed)
      : inner_(std::move(inner)),
        config_(std::move(config)),
        rank_(inner_->rank()),
        size_(inner_->size()),
        start_(Clock::now()),
        links_(static_cast<std::size_t>(size_)),
        hosts_(static_cast<std::size_t>(size_), "host unknown"),
        rng_(mix(seed ^ mix(static_cast<std::uint64_t>(rank_)))),
        timer_(start_background_thread([this] {
          trace::name_thread("shaper timer");
          run_timer();
        })) {
    if (config_.max_rank() >= size_.load()) {
      fabric_log().warn("shaper: config names rank {} but the group has {} ranks; those edges apply only if it joins",
                        config_.max_rank(), size_.load());
    }
  }

  ~ShapedTransportImpl() override {
    std::vector<Pending> leftover;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      for (auto& [key, pending] : queue_) leftover.push_back(std::move(pending));
      queue_.clear();
    }
    wake_.notify_all();
    timer_.join();
    for (auto& pending : leftover) {
      pending.outer->fail(std::make_exception_ptr(PeerError(pending.peer, host_of(pending.peer), "transport closed")));
    }
    // inner_ is destroyed last (declared first) and fails what it holds.
  }

  int rank() const override { return rank_; }
  int size() const override { return size_.load(); }
  std::string name() const override { return "shaped(" + inner_->name() + ")"; }
  std::string address() const override { return inner_->address(); }

  void connect(const std::vector<PeerInfo>& peers) override {
    inner_->connect(peers);
    // Absent ranks fail here too, so that sends to them fail at once rather
    // than after their link's latency.
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t r = 0; r < peers.size() && r < hosts_.size(); ++r) {
      if (!peers[r].host.empty()) hosts_[r] = peers[r].host;
      if (is_absent(peers[r]) && !links_[r].failed) {
        links_[r].failed = absent_peer_error(static_cast<int>(r), peers[r].host);
      }
    }
  }

  // The inner transport first: a send the timer hands over must find the
  // new rank there. The new link then follows the config like any other
  // (the default profile, or the edges that name its rank).
  void add_peer(const PeerInfo& peer) override {
    std::lock_guard<std::mutex> add_lock(add_mutex_);
    inner_->add_peer(peer);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto size = static_cast<std::size_t>(peer.rank) + 1;
      for (std::size_t r = links_.size(); r + 1 < size; ++r) {
        links_.emplace_back();
        links_.back().failed = absent_peer_error(static_cast<int>(r), "", skipped_rank_reason(peer.rank));
      }
      // Never shrinks: a later rank's add_peer may have grown it first.
      if (links_.size() < size) links_.resize(size);
      if (hosts_.size() < size) hosts_.resize(size, "host unknown");
      hosts_[static_cast<std::size_t>(peer.rank)] = peer.host;
      if (size_.load() < peer.rank + 1) size_.store(peer.rank + 1);
    }
  }

  RequestPtr isendv(int peer, Tag tag, SendPieces pieces) override {
    MURMUR_CHECK_GE(peer, 0);
    MURMUR_CHECK_LT(peer, size_.load());
    if (peer == rank_) return inner_->isendv(peer, tag, std::move(pieces));
    const std::size_t bytes = pieces.bytes();
    auto outer = std::make_shared<Request>(Request::Kind::kSend, peer, tag);
    std::exception_ptr failed;
    bool earliest = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Link& link = links_[static_cast<std::size_t>(peer)];
      failed = link.failed;
      if (!failed) {
        const Clock::time_point now = Clock::now();
        const LinkProfile profile = config_.profile_at(rank_, peer, now - start_);
        // Through the uplink too, the message holds both it and the link
        // for its time at the slower of the two rates.
        const bool via_uplink = profile.uplink_bytes_per_second > 0;
        double rate = profile.bytes_per_second;
        if (via_uplink)
          rate = rate > 0 ? std::min(rate, profile.uplink_bytes_per_second) : profile.uplink_bytes_per_second;
        const auto on_wire = rate > 0 ? std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(static_cast<double>(bytes) / rate))
                                      : Clock::duration::zero();
        Clock::time_point start = std::max(now, link.free_at);
        if (via_uplink) start = std::max(start, uplink_free_at_);
        link.free_at = start + on_wire;
        if (via_uplink) uplink_free_at_ = link.free_at;
        Clock::time_point due = link.free_at + profile.latency;
        if (profile.jitter.count() > 0) {
          std::uniform_int_distribution<std::int64_t> draw(0, profile.jitter.count());
          due += std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(draw(rng_)));
        }
        due = std::max(due, link.last_due);  // monotone per destination
        link.last_due = due;
        link.bytes_shaped += bytes;
        const Key key{due, next_seq_++};
        queue_.emplace(key, Pending{peer, tag, std::move(pieces), outer});
        earliest = queue_.begin()->first == key;
      }
    }
    if (failed) {
      outer->fail(failed);
    } else if (earliest) {
      wake_.notify_one();
    }
    return outer;
  }

  RequestPtr irecv(int peer, Tag tag, void* data, std::size_t capacity) override {
    return inner_->irecv(peer, tag, data, capacity);
  }

  void fail_peer(int peer, std::exception_ptr error) override {
    MURMUR_CHECK_GE(peer, 0);
    MURMUR_CHECK_LT(peer, size_.load());
    std::vector<Pending> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Link& link = links_[static_cast<std::size_t>(peer)];
      if (!link.failed) link.failed = error;
      for (auto it = queue_.begin(); it != queue_.end();) {
        if (it->second.peer == peer) {
          dropped.push_back(std::move(it->second));
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
    }
    // No wake-up needed: an early wake of the timer finds nothing due.
    for (auto& pending : dropped) pending.outer->fail(error);
    inner_->fail_peer(peer, std::move(error));
  }

  std::uint64_t bytes_shaped(int peer) const override {
    MURMUR_CHECK_GE(peer, 0);
    MURMUR_CHECK_LT(peer, size_.load());
    std::lock_guard<std::mutex> lock(mutex_);
    return links_[static_cast<std::size_t>(peer)].bytes_shaped;
  }

  Transport& inner() override { return *inner_; }

 private:
  struct Link {
    Clock::time_point free_at{};   // when the link finishes serialising
    Clock::time_point last_due{};  // hand-over time of the latest send
    std::uint64_t bytes_shaped = 0;
    std::exception_ptr failed;  // set by fail_peer
  };
  struct Pending {
    int peer;
    Tag tag;
    SendPieces pieces;
    RequestPtr outer;
  };
  // (due, sequence): equal due times keep queueing order.
  using Key = std::pair<Clock::time_point, std::uint64_t>;

  std::string host_of(int peer) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return hosts_[static_cast<std::size_t>(peer)];
  }

  void run_timer() {
    std::unique_lock<std::mutex> lock(mutex_);
    std::vector<Pending> batch;
    while (!stopping_) {
      if (queue_.empty()) {
        wake_.wait(lock);
        continue;
      }
      const Clock::time_point due = queue_.begin()->first.first;
      if (Clock::now() < due) {
        wake_.wait_until(lock, due);
        continue;
      }
      const Clock::time_point now = Clock::now();
      while (!queue_.empty() && queue_.begin()->first.first <= now) {
        batch.push_back(std::move(queue_.begin()->second));
        queue_.erase(queue_.begin());
      }
      // Hand over outside the lock: the inner isend and the completion
      // callbacks it may run inline must not nest inside mutex_. Only this
      // thread hands over, so order per destination is kept.
      lock.unlock();
      for (auto& pending : batch) release(pending);
      batch.clear();
      lock.lock();
    }
  }

  void release(Pending& pending) {
    RequestPtr inner_request;
    try {
      inner_request = inner_->isendv(pending.peer, pending.tag, std::move(pending.pieces));
    } catch (...) {
      pending.outer->fail(std::current_exception());
      return;
    }
    // The inner backend may touch the buffer after the inner request is
    // done (transport.h, buffer rule): it holds the outer request, and with
    // it whatever owner the caller gave that one, for as long.
    inner_request->retain(pending.outer);
    inner_request->on_done([outer = std::move(pending.outer)](Request& done) {
      if (auto error = done.error()) {
        outer->fail(std::move(error));
      } else {
        outer->complete(done.bytes());
      }
    });
  }

  // Declared in creation order; destroyed in reverse, inner_ last.
  std::unique_ptr<Transport> inner_;
  const ShaperConfig config_;
  const int rank_;
  // Grows with add_peer, stored once links_ and hosts_ cover the new rank.
  std::atomic<int> size_;
  const Clock::time_point start_;
  // Serialises add_peer, so that ranks join here in the inner's order.
  // Lock order: add_mutex_ before inner_'s locks and mutex_.
  std::mutex add_mutex_;
  // Lock order: mutex_ is a leaf; it is never held while calling inner_ or
  // completing a Request.
  mutable std::mutex mutex_;
  std::condition_variable wake_;        // timer: a new earliest send, or stop
  std::vector<Link> links_;             // by destination rank; grows with add_peer
  Clock::time_point uplink_free_at_{};  // when this rank's uplink finishes serialising
  std::vector<std::string> hosts_;      // by rank, from connect() and add_peer
  std::mt19937_64 rng_;
  std::map<Key, Pending> queue_;
  std::uint64_t next_seq_ = 0;
  bool stopping_ = false;
  std::thread timer_;  // last: starts once everything above exists
};

}  // namespace

std::unique_ptr<Transport> make_shaped_transport(std::unique_ptr<Transport> inner, ShaperConfig config,
                                                 std::uint64_t seed) {
  MURMUR_CHECK(inner != nullptr);
  return std::make_unique<ShapedTransportImpl>(std::move(inner), std::move(config), seed);
}

}  // namespace murmur::fabric::shaper
