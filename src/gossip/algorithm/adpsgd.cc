// AD-PSGD (Lian et al. 2018): asynchronous pairwise averaging, no global
// barrier. Every H-th step a node sends its model to one neighbour (random, or
// the "mutual" hypercube rule) and returns; a serving thread answers the
// neighbours' requests whenever they come.
//
// Protocol on one FIFO channel per direction (one tag), messages
//   REQ(s)   "average with my snapshot s"
//   REPLY(v) "I had v when your request arrived; I moved halfway to s"
//   BYE      "I will send no more requests"
// Node j serving REQ(s_i) from i: replies v = x_j, then x_j += (s_i - x_j)/2.
// Node i on REPLY(v): x_i += (v - s_i)/2. Both updates are additive and exact
// negatives of each other, so the sum over nodes is conserved, and no lock is
// held across a network wait: nothing can deadlock.
// Crossing: i and j request each other at once (each sent REQ before
// processing the other's). FIFO channels make this visible to both sides the
// same way: each receives the other's REQ while its own to that peer is
// unanswered. Both then apply x += (s_other - s_self)/2 and treat the
// exchange as done, without replies: one averaging, not two (which would swap
// the models). This is the case "all pick each other at once" in the tests.
// Termination: finish() waits for its own request, sends BYE to every
// neighbour, and keeps serving until every neighbour's BYE has arrived. So a
// neighbour's BYE does not end exchanges with it: requests to it are still
// answered (pick() does not skip it), and every step exchanges.
//
// Membership (tolerate_lost_peers): a neighbour whose link fails is lost:
// its request or reply is dropped (an exchange it did not answer changes
// nothing: both updates happen only on a reply or a crossing), it counts as
// finished for termination, and pick() never returns it again. A view
// change marks every neighbour outside the view lost the same way; the
// neighbour set never grows (a new member is not picked: exchanges pair up
// without rounds, so there is nothing to initialise, but the original
// graph's edges are what every rank agreed to use).
//
// Threads and locks: the caller thread (step/finish) and the serving thread
// share the model under mutex_; receive completions are handed over through
// the mailbox (its mutex is a leaf, taken in on_done callbacks). Lock order:
// mutex_ -> mailbox->mutex. Every isend on a channel is posted under mutex_
// so that the posting order is the protocol order.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/background_thread.h"
#include "common/check.h"
#include "common/log.h"
#include "common/trace.h"
#include "fabric/errors.h"
#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/traffic.h"

namespace murmur::gossip::detail {
namespace {

enum Kind : std::uint32_t { kReq = 1, kReply = 2, kBye = 3 };
constexpr std::size_t kHeader = 8;  // u32 kind, u32 zero; floats follow

using Buffer = std::vector<std::byte>;

struct Mailbox {
  std::mutex mutex;  // leaf lock
  std::condition_variable cv;
  std::deque<int> ready;  // neighbour indices whose receive completed
  bool stop = false;
  std::exception_ptr send_error;  // first failed send
};

class Adpsgd final : public Algorithm {
 public:
  Adpsgd(const AlgorithmOptions& o, Communicator& comm, const Topology& topology)
      : options_(o), comm_(comm), traffic_(comm), rng_(o.seed * 0x9e3779b97f4a7c15ULL + comm.rank()) {
    if (o.period < 1) throw std::invalid_argument("adpsgd: period (H) must be >= 1");
    require_algorithm_channel(o.channel, "adpsgd");
    if (o.pick != "random" && o.pick != "mutual")
      throw std::invalid_argument("adpsgd: pick must be 'random' or 'mutual', got '" + o.pick + "'");
    Graph g = topology.at_round(0);
    if (g.directed() || topology.time_varying())
      throw std::invalid_argument("adpsgd: needs a static undirected topology; '" + topology.name() + "' is not");
    for (const auto& l : g.out(comm.rank())) neighbours_.push_back(l.peer);
    if (neighbours_.empty())
      throw std::invalid_argument("adpsgd: rank " + std::to_string(comm.rank()) + " has no neighbour");
    const std::size_t m = neighbours_.size();
    bye_received_.assign(m, false);
    lost_.assign(m, false);
    posted_.assign(m, false);
    recv_buf_.resize(m);
    recv_req_.resize(m);
    tag_ = make_tag(o.channel, Phase::kAdpsgd, 0);
  }

  ~Adpsgd() override {
    {
      std::lock_guard lock(mailbox_->mutex);
      mailbox_->stop = true;
    }
    mailbox_->cv.notify_all();
    if (server_.joinable()) server_.join();
  }

  std::string name() const override { return "adpsgd"; }

  void step(std::span<float> params) override {
    std::unique_lock lock(mutex_);
    MURMUR_CHECK(!finished_);
    rethrow_if_failed(lock);
    start(params);
    absorb(params);
    ++steps_;
    if (gate_) adopt_view(lock);
    if (steps_ % static_cast<std::uint64_t>(options_.period) == 0) {
      wait_outstanding(lock);
      const int k = pick();
      if (k >= 0) send_request(k);  // -1: every neighbour was lost
    }
    publish(params);
  }

  void flush(std::span<float> params) override {
    std::unique_lock lock(mutex_);
    rethrow_if_failed(lock);
    start(params);
    absorb(params);
    wait_outstanding(lock);
    publish(params);
  }

  void finish(std::span<float> params) override {
    std::unique_lock lock(mutex_);
    if (finished_) return;
    rethrow_if_failed(lock);
    start(params);
    absorb(params);
    wait_outstanding(lock);
    finished_ = true;
    for (std::size_t k = 0; k < neighbours_.size(); ++k) send(k, kBye, {});
    const double deadline = comm_.now() + options_.timeout_s;
    double t0 = comm_.now();
    while (!(all_byes() && outstanding_ < 0) && !error_) {
      if (comm_.now() >= deadline) {
        for (std::size_t k = 0; k < neighbours_.size(); ++k)
          if (!bye_received_[k]) stall(lock, k, "did not finish (no BYE)");
      }
      cv_.wait_for(lock, std::chrono::milliseconds(200));
    }
    wait_seconds_ += comm_.now() - t0;
    rethrow_if_failed(lock);
    publish(params);
    lock.unlock();
    {
      std::lock_guard mlock(mailbox_->mutex);
      mailbox_->stop = true;
    }
    mailbox_->cv.notify_all();
    if (server_.joinable()) server_.join();
  }

  int period() const override { return options_.period; }
  void set_views(ViewSchedule* views) override { gate_ = views; }
  AlgorithmStats stats() const override {
    AlgorithmStats s;
    {
      std::lock_guard lock(mutex_);
      s.steps = steps_;
      s.rounds = exchanges_;
      s.served = served_;
      s.crossings = crossings_;
      s.wait_seconds = wait_seconds_;
      s.incomplete_rounds = dropped_;
      s.view_generation = view_generation_;
    }
    s.links = traffic_.links();
    return s;
  }

 private:
  // First call: take params as the model and start serving.
  void start(std::span<const float> params) {
    MURMUR_CHECK(!params.empty());
    if (!x_.empty()) return;
    x_.assign(params.begin(), params.end());
    given_ = x_;
    for (std::size_t k = 0; k < neighbours_.size(); ++k) post_recv(k);
    server_ = start_background_thread([this] {
      trace::name_thread("adpsgd server");
      serve();
    });
  }

  bool all_byes() const {
    return std::all_of(bye_received_.begin(), bye_received_.end(), [](bool b) { return b; });
  }

  void absorb(std::span<const float> params) {
    MURMUR_CHECK_EQ(params.size(), x_.size());
    for (std::size_t i = 0; i < x_.size(); ++i) x_[i] += params[i] - given_[i];
  }

  void publish(std::span<float> params) {
    std::copy(x_.begin(), x_.end(), params.begin());
    given_ = x_;
  }

  void rethrow_if_failed(std::unique_lock<std::mutex>&) {
    if (!error_) {
      std::lock_guard mlock(mailbox_->mutex);
      if (mailbox_->send_error) error_ = mailbox_->send_error;
    }
    if (error_) std::rethrow_exception(error_);
  }

  // Any neighbour, finished or not: BYE means "no more requests from me", and
  // its sender serves until our own BYE arrives. Skipping it would freeze a
  // rank that finished its steps early at its value of that moment while the
  // others go on averaging without it.
  int pick() {
    if (std::all_of(lost_.begin(), lost_.end(), [](bool b) { return b; })) return -1;
    int k = pick_any();
    // Redraw past lost neighbours: the draws of a rank with none lost are
    // the same as before membership existed (same seed, same sequence).
    while (lost_[static_cast<std::size_t>(k)]) k = random_neighbour();
    return k;
  }
  int random_neighbour() {
    return static_cast<int>(std::uniform_int_distribution<std::size_t>(0, neighbours_.size() - 1)(rng_));
  }

  // The view from the gate (caller thread, under mutex_, before the step's
  // exchange): neighbours outside it are lost.
  void adopt_view(std::unique_lock<std::mutex>& lock) {
    lock.unlock();
    auto change = gate_->before(steps_);
    lock.lock();
    if (!change) return;
    view_generation_ = change->view.generation;
    for (std::size_t k = 0; k < neighbours_.size(); ++k)
      if (!change->view.contains(neighbours_[k])) lose(k);
  }

  // Under mutex_.
  void lose(std::size_t k) {
    if (lost_[k]) return;
    lost_[k] = true;
    bye_received_[k] = true;  // it will send nothing more
    if (outstanding_ == static_cast<int>(k)) {
      outstanding_ = -1;  // unanswered: nothing to fold in
      ++dropped_;
    }
    gossip_log().warn("adpsgd: rank {} ({}) is lost; no more exchanges with it", neighbours_[k],
                      comm_.host(neighbours_[k]));
  }

  int pick_any() {
    if (options_.pick == "mutual") {
      const int p = comm_.size();
      int dim = 0;
      while ((1 << dim) < p) ++dim;
      if (dim > 0) {
        int partner = comm_.rank() ^ (1 << ((steps_ / options_.period - 1) % dim));
        for (std::size_t k = 0; k < neighbours_.size(); ++k)
          if (neighbours_[k] == partner) return static_cast<int>(k);
      }
    }
    return random_neighbour();
  }

  void send_request(int k) {
    outstanding_ = k;
    auto buf = message(kReq, x_);
    request_snapshot_ = x_;
    post_send(static_cast<std::size_t>(k), std::move(buf));
    if (!posted_[k]) post_recv(k);
  }

  void send(std::size_t k, Kind kind, std::span<const float> payload) { post_send(k, message(kind, payload)); }

  static std::shared_ptr<Buffer> message(Kind kind, std::span<const float> payload) {
    auto buf = std::make_shared<Buffer>(kHeader + payload.size_bytes());
    std::uint32_t header[2] = {kind, 0};
    std::memcpy(buf->data(), header, kHeader);
    if (!payload.empty()) std::memcpy(buf->data() + kHeader, payload.data(), payload.size_bytes());
    return buf;
  }

  // Caller holds mutex_ (protocol order).
  void post_send(std::size_t k, std::shared_ptr<Buffer> buf) {
    auto r = traffic_.send_bytes(neighbours_[k], tag_, std::span<const std::byte>(*buf), buf);
    traffic_.count_on_done(r);
    // A lost peer's failed send is handled by its failed receive (every
    // request to a failed link fails, and one is always posted to a peer
    // with an unanswered request).
    if (options_.tolerate_lost_peers) return;
    r->on_done([box = mailbox_](fabric::Request& done) {
      if (!done.error()) return;
      std::lock_guard lock(box->mutex);
      if (!box->send_error) box->send_error = done.error();
      box->cv.notify_all();
    });
  }

  // Caller holds mutex_, or is the constructor path.
  void post_recv(std::size_t k) {
    auto buf = std::make_shared<Buffer>(kHeader + x_.size() * sizeof(float));
    recv_buf_[k] = buf;
    posted_[k] = true;
    auto r = traffic_.recv_bytes(neighbours_[k], tag_, std::span<std::byte>(*buf), buf);
    recv_req_[k] = r;
    r->on_done([box = mailbox_, k](fabric::Request&) {
      std::lock_guard lock(box->mutex);
      box->ready.push_back(static_cast<int>(k));
      box->cv.notify_all();
    });
  }

  // Waits for this node's request to be answered. Caller holds mutex_.
  void wait_outstanding(std::unique_lock<std::mutex>& lock) {
    if (outstanding_ < 0) return;
    const double t0 = comm_.now();
    const double deadline = t0 + options_.timeout_s;
    while (outstanding_ >= 0 && !error_) {
      if (comm_.now() >= deadline)
        stall(lock, static_cast<std::size_t>(outstanding_), "did not answer an averaging request");
      cv_.wait_for(lock, std::chrono::milliseconds(200));
    }
    wait_seconds_ += comm_.now() - t0;
    rethrow_if_failed(lock);
  }

  // Declares neighbour k stalled through the communicator (which fails its
  // pending requests) and throws its PeerError.
  [[noreturn]] void stall(std::unique_lock<std::mutex>& lock, std::size_t k, const std::string& what) {
    auto r = recv_req_[k];
    lock.unlock();
    try {
      if (r) comm_.wait_all(std::span<const fabric::RequestPtr>(&r, 1), 0.0);
    } catch (...) {
      lock.lock();
      if (!error_) error_ = std::current_exception();
      std::rethrow_exception(error_);
    }
    lock.lock();
    int peer = neighbours_[k];
    error_ = std::make_exception_ptr(fabric::PeerError(
        peer, comm_.host(peer), "adpsgd: " + what + " within " + std::to_string(options_.timeout_s) + " s"));
    std::rethrow_exception(error_);
  }

  void serve() {
    for (;;) {
      int k;
      {
        std::unique_lock lock(mailbox_->mutex);
        mailbox_->cv.wait(lock, [&] { return mailbox_->stop || !mailbox_->ready.empty(); });
        if (mailbox_->stop) return;
        k = mailbox_->ready.front();
        mailbox_->ready.pop_front();
      }
      std::unique_lock lock(mutex_);
      handle(static_cast<std::size_t>(k));
      cv_.notify_all();
      if (error_) return;
    }
  }

  // Serving thread, under mutex_.
  void handle(std::size_t k) {
    auto req = recv_req_[k];
    auto buf = recv_buf_[k];
    posted_[k] = false;
    if (auto e = req->error()) {
      if (options_.tolerate_lost_peers) return lose(k);
      if (!error_) error_ = e;
      gossip_log().error("adpsgd: receive from rank {} failed", neighbours_[k]);
      return;
    }
    traffic_.count(*req);
    const std::size_t n = x_.size();
    std::uint32_t header[2];
    if (req->bytes() < kHeader) return protocol_error(k, "short message");
    std::memcpy(header, buf->data(), kHeader);
    const std::size_t floats = (req->bytes() - kHeader) / sizeof(float);
    const float* in = reinterpret_cast<const float*>(buf->data() + kHeader);
    switch (header[0]) {
      case kReq: {
        if (floats != n)
          return protocol_error(k, "request of " + std::to_string(floats) + " elements, expected " + std::to_string(n));
        if (outstanding_ == static_cast<int>(k)) {  // crossing: one averaging
          for (std::size_t i = 0; i < n; ++i) x_[i] += 0.5f * (in[i] - request_snapshot_[i]);
          outstanding_ = -1;
          ++exchanges_;
          ++crossings_;
        } else {
          send(k, kReply, x_);
          for (std::size_t i = 0; i < n; ++i) x_[i] += 0.5f * (in[i] - x_[i]);
        }
        ++served_;
        break;
      }
      case kReply: {
        if (outstanding_ != static_cast<int>(k) || floats != n) return protocol_error(k, "unexpected reply");
        for (std::size_t i = 0; i < n; ++i) x_[i] += 0.5f * (in[i] - request_snapshot_[i]);
        outstanding_ = -1;
        ++exchanges_;
        break;
      }
      case kBye:
        bye_received_[k] = true;
        break;
      default:
        return protocol_error(k, "unknown message kind " + std::to_string(header[0]));
    }
    if (!bye_received_[k] || outstanding_ == static_cast<int>(k)) post_recv(k);
  }

  void protocol_error(std::size_t k, const std::string& what) {
    int peer = neighbours_[k];
    if (!error_)
      error_ = std::make_exception_ptr(fabric::PeerError(peer, comm_.host(peer), "adpsgd protocol: " + what));
  }

  const AlgorithmOptions options_;
  Communicator& comm_;
  Traffic traffic_;
  std::mt19937_64 rng_;
  fabric::Tag tag_ = 0;
  std::vector<int> neighbours_;
  std::shared_ptr<Mailbox> mailbox_ = std::make_shared<Mailbox>();

  mutable std::mutex mutex_;  // guards everything below; taken before mailbox_->mutex
  std::condition_variable cv_;
  std::vector<float> x_, given_, request_snapshot_;
  int outstanding_ = -1;  // neighbour index with an unanswered request
  std::vector<bool> bye_received_, posted_;
  std::vector<bool> lost_;  // by neighbour index: link failed or outside the view
  ViewSchedule* gate_ = nullptr;
  std::uint64_t view_generation_ = 0, dropped_ = 0;
  std::vector<std::shared_ptr<Buffer>> recv_buf_;
  std::vector<fabric::RequestPtr> recv_req_;
  std::exception_ptr error_;
  bool finished_ = false;
  std::uint64_t steps_ = 0, exchanges_ = 0, served_ = 0, crossings_ = 0;
  double wait_seconds_ = 0;
  std::thread server_;  // last
};

}  // namespace

std::unique_ptr<Algorithm> make_adpsgd(const AlgorithmOptions& o, Communicator& comm, const Topology& topology) {
  return std::make_unique<Adpsgd>(o, comm, topology);
}

}  // namespace murmur::gossip::detail
