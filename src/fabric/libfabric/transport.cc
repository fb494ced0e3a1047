// The libfabric Transport: a thread-safe front over one endpoint and its
// Engine, which only the holder of the progress role (role_mutex_) touches.
//
// Who holds the role:
//   - the progress thread, for each turn (take queued commands, post, read
//     the CQ); it sleeps without it (Waiter::wait), so that
//   - a thread waiting on a request (Request::wait_until -> drive) takes it
//     if it is free (try_lock, never blocking for it), makes progress itself
//     while its bounded adaptive spin (SpinPolicy, shared with the progress
//     thread) allows, then lets go, wakes the progress thread and blocks on
//     the request as before. A reply that comes within the spin is seen on
//     the waiting thread, with no thread hand-off: that is the latency gain.
//     Meanwhile, and for the spin's bound after a drive whose request
//     completed, the progress thread sleeps off the CQ's wait fd (woken
//     only by commands, a caller handing back, or that bound), so that the
//     completions callers poll for do not also wake it into a turn that
//     takes the role from under them (cq_left_to_callers());
//   - isend / irecv post their operation at once from the calling thread
//     when the role is free and nothing else is queued ahead of it (posting
//     never reads the CQ, so no other request completes there).
// A provider that keeps the progress thread awake without completing
// anything (its wait refused or ended at once, round after round) gets the
// thread's naps instead of a spinning core (FutileRoundBackoff).
// Callers never enter shm: libfabric 1.17's shm can spin for ever inside a
// call once a peer died holding its lock, and only the progress thread may
// get stuck like that (see shutdown()). Keeping callers out only once a peer
// has failed is not enough: a peer is known to have died some hundreds of
// milliseconds after it did, and a caller that posted to it in between spun
// in fi_tsend for ever (Loopback/PeerDeath...LibfabricShm under ASan, 3 Dec
// 2026: two survivors never exited). On the other providers callers drive
// only while no peer has failed.
//
// Lock order: add_mutex_, then role_mutex_, then mutex_, then Request's own
// (leaf) mutex; Request's mutex is never held while taking mutex_.
#include "fabric/libfabric/transport.h"

#include <sched.h>

#include <rdma/fi_cm.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <variant>

#include "common/background_thread.h"
#include "common/check.h"
#include "common/log.h"
#include "common/trace.h"
#include "fabric/errors.h"
#include "fabric/libfabric/endpoint.h"
#include "fabric/libfabric/engine.h"
#include "fabric/libfabric/fi_check.h"
#include "fabric/libfabric/futile_round_backoff.h"
#include "fabric/libfabric/spin_policy.h"
#include "fabric/libfabric/waiter.h"
#include "fabric/peer_list.h"
#include "fabric/spin_wait_driver.h"

// Built with -fsanitize=thread: gcc says so with __SANITIZE_THREAD__, clang
// with __has_feature (see try_take_role()).
#if defined(__SANITIZE_THREAD__)
#define MURMUR_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MURMUR_THREAD_SANITIZER 1
#endif
#endif
#ifndef MURMUR_THREAD_SANITIZER
#define MURMUR_THREAD_SANITIZER 0
#endif

namespace murmur::fabric::libfabric {
namespace {

using namespace std::chrono_literals;

// One poll of the bounded spin. sched_yield, not a pause instruction: on a
// host with fewer cores than busy threads (2 cores: the caller, two
// progress threads), a poller that keeps its core starves the very thread
// that would post the next message; yielding hands the core to any thread
// that is ready and polls again only when none is.
inline void cpu_relax() { ::sched_yield(); }

struct FailPeer {
  int peer;
  std::exception_ptr error;
};
// A joining peer's address, inserted into the AV by the progress thread
// (FI_THREAD_DOMAIN: it alone touches the endpoint once connected).
struct AddPeer {
  PeerInfo peer;
  std::shared_ptr<std::promise<void>> inserted;
};
using Command = std::variant<std::unique_ptr<Operation>, FailPeer, AddPeer>;

// The state shared by the public handle and the progress thread. The thread
// holds a reference so that, if it is stuck inside the provider (see
// shutdown()), the endpoint it is using is never freed under it.
class LibfabricTransport final : public Transport,
                                 public ProgressDriver,
                                 public std::enable_shared_from_this<LibfabricTransport> {
 public:
  explicit LibfabricTransport(const TransportOptions& options)
      : options_(options),
        endpoint_(options, choose_provider(options)),
        doorbell_(endpoint_.shm_region.empty() || endpoint_.wait_fd >= 0 ? nullptr
                                                                         : Doorbell::create(endpoint_.shm_region)),
        waiter_(endpoint_.fabric.get(), endpoint_.cq.get(), endpoint_.wait_fd, endpoint_.wait_in_sread,
                doorbell_.get()),
        spin_(options.max_spin),
        futile_(FutileRoundBackoff::grace_for_chunk(options.chunk_bytes)),
        engine_(endpoint_, options.chunk_bytes,
                [this](int peer, std::exception_ptr error) { fail_outstanding(peer, error); }) {
    char name[256];
    std::size_t len = sizeof(name);
    fi_check(fi_getname(&endpoint_.ep->fid, name, &len), "fi_getname");
    address_.assign(name, len);
    failed_.assign(options.size, nullptr);
    outstanding_.resize(options.size);
    prune_at_.assign(options.size, kMinPruneSize);
    hosts_.assign(options.size, "unknown host");
  }

  // Runs on the owning thread after shutdown(), or on the progress thread
  // itself when shutdown() abandoned it and it exited later: either way no
  // other thread touches the engine. The progress thread closed it already
  // if it ran; closing again is a no-op. Closing closes the endpoint before
  // the operations, and the buffers their requests retain, are freed.
  ~LibfabricTransport() override {
    engine_.close();
    fabric_log().debug("libfabric transport rank {} closed", options_.rank);
  }

  // Stops the progress thread, which closes the endpoint as it exits, and
  // fails what is pending with "transport closed". Called once, by the
  // owning handle.
  //
  // libfabric 1.17's shm provider takes spin locks that live in the peers'
  // shared memory; a peer killed while holding one leaves every process
  // that sends to it spinning inside fi_tsend for ever. If the progress
  // thread does not stop within kStopTimeout (2 s; it normally stops in
  // microseconds) it is stuck like that, or inside fi_close: it is
  // detached and keeps its reference to this object, whose endpoint is then
  // deliberately never closed from here (closing it under the stuck thread
  // would be a use-after-free), and whose operations keep their requests and
  // so the buffers they retain. Requests were already failed from this side,
  // so callers do not hang; the process can still exit.
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    watchdog_cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    waiter_.wake();
    bool stopped = true;
    if (thread_.joinable()) {
      std::unique_lock<std::mutex> lock(mutex_);
      // Once the watchdog has seen the thread stuck there is no point waiting.
      stopped = thread_exited_cv_.wait_for(lock, progress_stuck_ ? std::chrono::seconds(0) : kStopTimeout,
                                           [this] { return thread_exited_; });
    }
    if (!stopped) {
      fabric_log().error(
          "libfabric: the progress thread of rank {} is stuck inside provider {} (a peer that died "
          "holding a shared lock, or closing a connection to a stopped peer?); abandoning its endpoint",
          options_.rank, endpoint_.provider);
      thread_.detach();
      fail_all_outstanding("transport closed");
      return;
    }
    if (thread_.joinable()) thread_.join();
    // Operations the thread never took (it has closed the endpoint): fail
    // them too.
    std::deque<Command> left;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      left.swap(commands_);
    }
    for (auto& command : left) {
      if (auto* op = std::get_if<std::unique_ptr<Operation>>(&command)) {
        (*op)->request->fail(peer_error((*op)->peer, "transport closed"));
      } else if (auto* add = std::get_if<AddPeer>(&command)) {
        add->inserted->set_exception(peer_error(add->peer.rank, "transport closed before the peer was added"));
      }
    }
  }

  int rank() const override { return options_.rank; }
  int size() const override { return size_.load(); }
  std::string name() const override { return "libfabric:" + endpoint_.provider; }
  std::string address() const override { return address_; }

  void connect(const std::vector<PeerInfo>& peers) override {
    check_peer_list(peers, options_.size, options_.rank, "libfabric");
    MURMUR_CHECK(!connected_.load());
    std::vector<fi_addr_t> addresses(peers.size(), FI_ADDR_NOTAVAIL);
    std::vector<int> absent;
    for (std::size_t r = 0; r < peers.size(); ++r) {
      if (is_absent(peers[r])) {
        absent.push_back(static_cast<int>(r));
        continue;
      }
      const int ret = fi_av_insert(endpoint_.av.get(), peers[r].address.data(), 1, &addresses[r], 0, nullptr);
      if (ret != 1) {
        throw PeerError(peers[r].rank, peers[r].host, fi_error_text("fi_av_insert", ret < 0 ? ret : -FI_EADDRNOTAVAIL));
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t r = 0; r < peers.size(); ++r) {
        if (!peers[r].host.empty()) hosts_[r] = peers[r].host;
      }
      // Absent from the start: no watchdog, nothing was pending.
      for (int r : absent) failed_[r] = absent_peer_error(r, peers[r].host);
    }
    // The progress thread starts only now: until then this thread alone
    // touched the endpoint (FI_THREAD_DOMAIN).
    engine_.set_peers(peers, std::move(addresses));
    for (int r : absent) engine_.fail_peer(r, failed_[r]);
    connected_.store(true);
    thread_ = start_background_thread([self = shared_from_this()] {
      trace::name_thread("fabric progress");
      std::unique_lock<std::timed_mutex> role(self->role_mutex_, std::defer_lock);
      self->run(role);
      // The thread that made every data call closes the endpoint too: rxm
      // may block in fi_close (flushing a connection to a stopped peer), and
      // shutdown() can only bound a wait for this thread, not for a call it
      // makes itself.
      try {
        self->engine_.close();
      } catch (const std::exception& e) {
        fabric_log().error("libfabric: closing the endpoint of rank {}: {}", self->options_.rank, e.what());
      }
      role.unlock();
      {
        std::lock_guard<std::mutex> lock(self->mutex_);
        self->thread_exited_ = true;
      }
      self->thread_exited_cv_.notify_all();
    });
    watchdog_ = start_background_thread([this] { watch_progress(); });
  }

  void add_peer(const PeerInfo& peer) override {
    std::lock_guard<std::mutex> add_lock(add_mutex_);
    check_new_peer(peer, size_.load(), options_.rank, connected_.load(), "libfabric");
    auto inserted = std::make_shared<std::promise<void>>();
    auto done = inserted->get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) throw FabricError("libfabric transport: add_peer while closing");
      commands_.emplace_back(AddPeer{peer, inserted});
    }
    waiter_.wake();
    // The progress thread answers within one turn unless a provider holds
    // it (see shutdown()); then the peer is not added.
    if (done.wait_for(options_.connect_timeout) != std::future_status::ready) {
      throw PeerError(peer.rank, peer.host,
                      "libfabric rank " + std::to_string(options_.rank) +
                          ": the progress thread did not insert the joining peer's address within the connect timeout");
    }
    done.get();  // rethrows fi_av_insert's failure
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto size = static_cast<std::size_t>(peer.rank) + 1;
      for (std::size_t r = failed_.size(); r < static_cast<std::size_t>(peer.rank); ++r) {
        failed_.push_back(absent_peer_error(static_cast<int>(r), "", skipped_rank_reason(peer.rank)));
      }
      failed_.resize(size);
      outstanding_.resize(size);
      prune_at_.resize(size, kMinPruneSize);
      hosts_.resize(size, "unknown host");
      hosts_[peer.rank] = peer.host;
    }
    // Only now: a request to the new rank must find its state above.
    size_.store(peer.rank + 1);
    fabric_log().info("libfabric rank {}: rank {} ({}) joins; the group has {} ranks", options_.rank, peer.rank,
                      peer.host, peer.rank + 1);
  }

  RequestPtr isendv(int peer, Tag tag, SendPieces pieces) override {
    auto request = std::make_shared<Request>(Request::Kind::kSend, peer, tag);
    request->set_driver(weak_from_this());
    const std::size_t bytes = pieces.bytes();
    if (bytes > engine_.max_message_bytes()) {
      request->fail(std::make_exception_ptr(
          FabricError("isend: message of " + std::to_string(bytes) + " bytes exceeds the " +
                      std::to_string(engine_.max_message_bytes()) + " bytes that provider " + endpoint_.provider_name +
                      " can announce in " + std::to_string(endpoint_.cq_data_size) + " bytes of CQ data")));
      return request;
    }
    return submit(std::move(request), peer, tag, nullptr, bytes, std::move(pieces));
  }

  RequestPtr irecv(int peer, Tag tag, void* data, std::size_t capacity) override {
    auto request = std::make_shared<Request>(Request::Kind::kRecv, peer, tag);
    request->set_driver(weak_from_this());
    return submit(std::move(request), peer, tag, data, capacity);
  }

  // ProgressDriver: the waiting thread makes progress itself while the spin
  // allows (see the top of this file).
  void drive(const Request& request, Clock::time_point deadline) noexcept override {
    note_drive();  // even when done already: a caller is about
    if (request.test()) return;
    // A callback that this thread runs as the role's holder and that waits
    // on another request blocks on that request instead.
    if (role_owner_.load() == std::this_thread::get_id()) {
      hand_cq_back();
      return;
    }
    // Kept out of the provider (shm; a peer failed): the caller can still
    // look, polling its request for the spin before it sleeps, so that a
    // completion within it costs no wake-up (spin_wait_driver.h).
    if (!callers_enter_provider_ || any_failed_.load() || !connected_.load()) {
      hand_cq_back();
      SpinWaitDriver::poll_request(request, deadline, options_.max_spin);
      return;
    }
    // The progress thread holds the role only for a turn (microseconds);
    // longer means another caller drives, or a provider holds the thread
    // (see shutdown()): then block on the request as before.
    std::unique_lock<std::timed_mutex> role = try_take_role();
    if (!role) {
      if (!request.test()) hand_cq_back();
      return;
    }
    const RoleHolder holder(role_owner_);
    cq_watched_until_ns_.store(std::numeric_limits<std::int64_t>::max());
    const auto start = SpinPolicy::Clock::now();
    for (;;) {
      const Turn turn = run_turn();
      if (turn.stopping) return;
      const auto now = SpinPolicy::Clock::now();
      if (request.test() || now >= deadline || any_failed_.load()) break;
      if (turn.busy) {
        spin_.note_work(now);
        continue;
      }
      // The learned budget, but never less than kMinDriveSpin: after a
      // stream of large messages (each a miss) it may be zero, and a
      // hand-off on a loaded host takes longer than max_spin, so it would
      // not learn its way back (the 8-byte round trip stayed at 20-40 us).
      const bool keep = spin_.keep_polling(now, !engine_.idle());
      if (!keep && now - start >= std::min<SpinPolicy::Clock::duration>(options_.max_spin, kMinDriveSpin)) break;
      cpu_relax();
    }
    const bool polled_work_left = endpoint_.wait_fd < 0 && !engine_.idle();
    note_drive();
    role.unlock();
    // The progress thread takes over from here: it may be asleep on a wait
    // fd whose trywait our calls came after, or on a back-off (shm, no fd)
    // while operations we posted are still in flight. A caller whose
    // request completed is likely back within the spin (the next message of
    // a ping-pong): the CQ stays its own that long.
    if (!request.test() || polled_work_left) {
      hand_cq_back();
    } else {
      cq_watched_until_ns_.store(now_ns() + caller_returns_ns());
    }
  }

  void fail_peer(int peer, std::exception_ptr error) override {
    MURMUR_CHECK(peer >= 0 && peer < size_.load());
    if (!fail_outstanding(peer, error)) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      commands_.emplace_back(FailPeer{peer, std::move(error)});
    }
    waiter_.wake();
  }

 private:
  static constexpr std::size_t kMinPruneSize = 64;
  static constexpr auto kStopTimeout = std::chrono::seconds(2);
  static constexpr auto kStallTimeout = std::chrono::seconds(1);

  // Records the failure and fails, from this thread, every request to
  // `peer` still outstanding: delivery must not depend on the progress
  // thread, which a provider can hold up (see shutdown()). The engine
  // retires its records of them later; whichever outcome comes first wins.
  // Returns false if the peer had failed before.
  bool fail_outstanding(int peer, std::exception_ptr error) {
    std::vector<std::weak_ptr<Request>> victims;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      MURMUR_CHECK(peer >= 0 && static_cast<std::size_t>(peer) < failed_.size());
      if (failed_[peer]) return false;
      failed_[peer] = error;
      victims.swap(outstanding_[peer]);
      watch_requested_ = true;
    }
    watchdog_cv_.notify_all();
    any_failed_.store(true);
    for (auto& weak : victims) {  // outside the lock: callbacks may call in
      if (auto request = weak.lock()) request->fail(error);
    }
    waiter_.wake();  // a driving caller waits no longer than it must
    return true;
  }

  // The front's own PeerError for `peer`: engine_.peer_error reads state
  // the progress thread grows (add_peer), so other threads use this one.
  std::exception_ptr peer_error(int peer, const std::string& reason) {
    std::string host;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      host = peer >= 0 && static_cast<std::size_t>(peer) < hosts_.size() ? hosts_[peer] : "?";
    }
    return std::make_exception_ptr(PeerError(peer, host, reason));
  }

  void fail_all_outstanding(const std::string& reason) {
    for (int peer = 0; peer < size_.load(); ++peer) {
      std::vector<std::weak_ptr<Request>> victims;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        victims.swap(outstanding_[peer]);
      }
      for (auto& weak : victims) {
        if (auto request = weak.lock()) request->fail(peer_error(peer, reason));
      }
    }
  }

  // The watchdog sleeps until a peer fails, then checks that the progress
  // thread still turns (it passes its loop at least every 200 ms). If it
  // does not within kStallTimeout, it is stuck inside the provider (see
  // shutdown()) and nothing will move on this endpoint again: every peer is
  // failed with an error that says so, so that callers stop waiting.
  void watch_progress() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      watchdog_cv_.wait(lock, [this] { return stopping_ || watch_requested_; });
      if (stopping_) return;
      watch_requested_ = false;
      const auto turns = progress_turns_.load();
      if (watchdog_cv_.wait_for(lock, kStallTimeout, [this] { return stopping_; })) return;
      if (progress_turns_.load() != turns) continue;
      lock.unlock();
      fabric_log().error(
          "libfabric: progress on provider {} has been stuck for {} ms since a peer failed; "
          "failing every peer of rank {}",
          endpoint_.provider, std::chrono::duration_cast<std::chrono::milliseconds>(kStallTimeout).count(),
          options_.rank);
      for (int peer = 0; peer < size_.load(); ++peer) {
        fail_outstanding(peer, peer_error(peer, "progress stuck inside libfabric provider " + endpoint_.provider +
                                                    " after another peer failed; this endpoint is unusable"));
      }
      lock.lock();
      progress_stuck_ = true;
      watch_requested_ = false;
    }
  }

  // Drops records of requests that are done; amortised O(1) per submit.
  // Called with mutex_ held (Request's mutex is a leaf below it).
  void prune_outstanding(int peer) {
    auto& list = outstanding_[peer];
    if (list.size() < prune_at_[peer]) return;
    std::erase_if(list, [](const std::weak_ptr<Request>& weak) {
      auto request = weak.lock();
      return !request || request->test();
    });
    prune_at_[peer] = std::max(kMinPruneSize, 2 * list.size());
  }

  // A receive into `data`, or a send of `pieces` (`bytes` in all).
  RequestPtr submit(RequestPtr request, int peer, Tag tag, void* data, std::size_t bytes, SendPieces pieces = {}) {
    MURMUR_CHECK(peer >= 0 && peer < size_.load());
    if (!connected_.load()) {
      throw FabricError("libfabric transport: isend/irecv before connect()");
    }
    auto op = std::make_unique<Operation>();
    op->request = request;
    op->peer = peer;
    op->tag = tag;
    op->data = static_cast<char*>(data);
    op->pieces = std::move(pieces);
    op->capacity = bytes;
    // Posted from this thread when the role is free; not by a thread that
    // holds it already (a callback run by drive() that sends again).
    std::unique_lock<std::timed_mutex> role;
    if (callers_enter_provider_ && !any_failed_.load() && role_owner_.load() != std::this_thread::get_id()) {
      role = std::unique_lock<std::timed_mutex>(role_mutex_, std::try_to_lock);
    }
    std::exception_ptr failed;
    bool direct = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) throw FabricError("libfabric transport: used while closing");
      failed = failed_[peer];
      if (!failed) {
        prune_outstanding(peer);
        outstanding_[peer].push_back(request);
        // Only with nothing queued or unposted ahead: order is kept, and
        // posting then concerns this operation alone (its failure fails no
        // other request, so no callback runs on this thread).
        direct = role.owns_lock() && commands_.empty() && !engine_.has_pending_posts();
        if (!direct) commands_.emplace_back(std::move(op));
      }
    }
    if (failed) {  // outside the lock: callbacks may call into the transport
      request->fail(failed);
      return request;
    }
    if (direct) {
      const RoleHolder holder(role_owner_);
      try {
        engine_.submit(std::move(op));
        engine_.post_pending();
      } catch (const std::exception& e) {
        fabric_log().error("libfabric rank {}: posting from the caller: {}", options_.rank, e.what());
        engine_.fail_everything(std::current_exception());
      }
      role.unlock();
      // A thread asleep on its CQ's wait object sees the completion; one
      // that polls on a back-off (no wait fd) is told to look sooner.
      if (endpoint_.wait_fd < 0) waiter_.wake();
      return request;
    }
    if (role.owns_lock()) role.unlock();
    waiter_.wake();
    return request;
  }

  static constexpr auto kRoleWait = std::chrono::microseconds(200);

  // The role if it comes free within kRoleWait. libstdc++ waits for a
  // timed_mutex on the steady clock with pthread_mutex_clocklock, which
  // ThreadSanitizer runtimes before LLVM 18 do not intercept (gcc 12's among
  // them; llvm/llvm-project#62623): TSan then never sees drive() take the
  // role, takes its unlock for "unlock of an unlocked mutex" and, missing
  // the hand-over's happens-before, reports races on everything the role
  // guards (docs/testing.md, sanitizer lanes). Under TSan the wait is on the
  // system clock instead: pthread_mutex_timedlock, which every TSan runtime
  // intercepts. Normal builds keep the steady clock, which a clock step
  // cannot stretch while a provider holds the progress thread (shutdown()).
  std::unique_lock<std::timed_mutex> try_take_role() {
#if MURMUR_THREAD_SANITIZER
    return std::unique_lock<std::timed_mutex>(role_mutex_, std::chrono::system_clock::now() + kRoleWait);
#else
    return std::unique_lock<std::timed_mutex>(role_mutex_, kRoleWait);
#endif
  }
  static constexpr auto kMinDriveSpin = std::chrono::microseconds(10);
  // The progress thread leaves the spinning to callers that drove this
  // recently.
  static constexpr auto kCallerDrives = std::chrono::milliseconds(10);

  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }
  void note_drive() { last_drive_ns_.store(now_ns(), std::memory_order_relaxed); }
  bool caller_drives() const {
    return now_ns() - last_drive_ns_.load(std::memory_order_relaxed) <
           std::chrono::duration_cast<std::chrono::nanoseconds>(kCallerDrives).count();
  }

  // A caller that drove is about to block (or cannot drive): the CQ is the
  // progress thread's again, and it is woken if it had left it (run()).
  void hand_cq_back() {
    if (cq_watched_until_ns_.exchange(0) > now_ns()) waiter_.wake();
  }

  // How long the progress thread leaves the CQ to callers from now, zero
  // when it should watch it itself: while a caller drives, and for
  // caller_returns_ns() after one whose request completed. A completion then
  // reaches the caller polling for it, and the progress thread, which the
  // CQ's wait fd would also wake for it, stays asleep: on the 8-byte round
  // trip that wake-up, and the role it then took from under the caller,
  // were most of the gap to a socket's round trip
  // (docs/fabric-performance.md). What no caller waits for meanwhile (a
  // send's completion, another tag's message) completes up to twice that
  // later; the thread sleeps at most that long at a time, so a caller that
  // drives for longer costs it one wake-up per spin's bound.
  std::chrono::nanoseconds cq_left_to_callers() const {
    if (!waiter_.can_leave_cq()) return {};
    const auto left = cq_watched_until_ns_.load() - now_ns();
    return std::chrono::nanoseconds(std::clamp<std::int64_t>(left, 0, caller_returns_ns()));
  }
  // How long a caller whose request completed keeps the CQ: the spin's
  // bound, the time worth polling for an imminent completion. None when
  // spinning is off (max_spin 0): such a caller drives one turn and leaves,
  // so the progress thread must not wait for it to come back.
  std::int64_t caller_returns_ns() const {
    if (options_.max_spin.count() <= 0) return 0;
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(options_.max_spin, kMinDriveSpin)).count();
  }

  // Marks the calling thread as the role's holder for its lifetime.
  class RoleHolder {
   public:
    explicit RoleHolder(std::atomic<std::thread::id>& owner) : owner_(owner) {
      owner_.store(std::this_thread::get_id());
    }
    // Only if still ours: the role may have passed on before this runs.
    ~RoleHolder() {
      auto self = std::this_thread::get_id();
      owner_.compare_exchange_strong(self, std::thread::id());
    }
    RoleHolder(const RoleHolder&) = delete;
    RoleHolder& operator=(const RoleHolder&) = delete;

   private:
    std::atomic<std::thread::id>& owner_;
  };

  struct Turn {
    bool busy = false;      // something was posted, completed or handed over
    bool stopping = false;  // shutdown() began: nothing was done
  };

  // One turn, with the role held: the queued commands, then the engine.
  Turn run_turn() {
    progress_turns_.fetch_add(1, std::memory_order_relaxed);
    std::deque<Command> commands;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return Turn{false, true};
      commands.swap(commands_);
    }
    try {
      for (auto& command : commands) {
        if (auto* op = std::get_if<std::unique_ptr<Operation>>(&command)) {
          engine_.submit(std::move(*op));
        } else if (auto* fail = std::get_if<FailPeer>(&command)) {
          engine_.fail_peer(fail->peer, fail->error);
        } else {
          add_peer_now(std::get<AddPeer>(command));
        }
      }
      return Turn{engine_.progress() || !commands.empty(), false};
    } catch (const std::exception& e) {
      // A bug (MURMUR_CHECK) must not kill the process from this thread:
      // hand it to every waiter instead.
      fabric_log().error("libfabric progress: {}", e.what());
      engine_.fail_everything(std::current_exception());
      return Turn{true, false};
    }
  }

  // Progress thread: inserts a joining peer and tells add_peer how it went.
  void add_peer_now(AddPeer& add) {
    try {
      engine_.add_peer(add.peer);
      add.inserted->set_value();
    } catch (...) {
      add.inserted->set_exception(std::current_exception());
    }
  }

  // The progress thread. Returns with the role held (`role`), so that the
  // endpoint is closed by this thread with no caller inside it.
  void run(std::unique_lock<std::timed_mutex>& role) {
    for (;;) {
      role.lock();
      const RoleHolder holder(role_owner_);
      waiter_.before_looking();
      const Turn turn = run_turn();
      if (turn.stopping) {
        if (futile_.naps() > 0) {
          fabric_log().info(
              "libfabric: provider {} kept the progress thread of rank {} awake without work; it napped {} "
              "times (futile_round_backoff.h)",
              endpoint_.provider, options_.rank, futile_.naps());
        }
        return;
      }
      const auto now = SpinPolicy::Clock::now();
      if (turn.busy) {
        waiter_.note_busy();
        spin_.note_work(now);
        futile_.note_work();
        role.unlock();
        continue;
      }
      if (cq_left_to_callers().count() > 0) {
        // The callers' completions are work this thread does not see.
        futile_.note_work();
        role.unlock();
        // Until woken (a command, a caller handing back) or no caller has
        // driven for caller_returns_ns(); a caller that keeps driving keeps
        // this thread asleep, without a turn of its own in between.
        for (auto left = cq_left_to_callers(); left.count() > 0; left = cq_left_to_callers()) {
          if (waiter_.wait_for_wake(std::chrono::duration_cast<std::chrono::microseconds>(left) + 1us)) break;
        }
        continue;
      }
      if (!caller_drives() && spin_.keep_polling(now, !engine_.idle())) {
        role.unlock();
        cpu_relax();
        continue;
      }
      // Bounded waits while work is in flight guard against a provider that
      // needs progress without signalling its fd; idle waits are long.
      // shm with single-copy transfers: receives alone are announced by the
      // senders' rings, so they sleep on the doorbell (20 ms at most,
      // against a ring that never comes) instead of polling; anything else
      // keeps polling, ringing the receivers of its sends before each sleep
      // (Engine::only_rings_bring_work, ring_receivers_of_sends).
      const auto max_wait = engine_.has_pending_posts() ? 1000us : engine_.idle() ? 200000us : 20000us;
      const bool only_rings = engine_.idle() || engine_.only_rings_bring_work();
      if (!only_rings && doorbell_) engine_.ring_receivers_of_sends();
      const bool may_block = waiter_.may_block();
      role.unlock();
      const auto wait_start = SpinPolicy::Clock::now();
      // A wait that wake() ended (a command) is followed by a turn, not a
      // nap: the command is looked for first.
      if (may_block && waiter_.wait(max_wait, only_rings)) continue;
      const auto wait_end = SpinPolicy::Clock::now();
      // A provider that keeps refusing the wait, or ends it at once, with
      // nothing to show for it: nap (futile_round_backoff.h).
      const auto nap = futile_.note_idle_round(wait_end, wait_end - wait_start);
      if (nap.count() > 0) waiter_.nap(nap);
    }
  }

  const TransportOptions options_;
  // Creation order: closed in reverse.
  Endpoint endpoint_;
  std::unique_ptr<Doorbell> doorbell_;  // shm: this endpoint's (doorbell.h); the waiter sleeps on it
  Waiter waiter_;
  SpinPolicy spin_;            // the role's holder only
  FutileRoundBackoff futile_;  // the progress thread only
  Engine engine_;
  std::string address_;
  std::atomic<bool> connected_{false};
  // Ranks known; stored by add_peer only after the state below covers them.
  std::atomic<int> size_{options_.size};
  std::mutex add_mutex_;  // serialises add_peer
  // The progress role: whoever holds it may touch engine_, spin_ and make
  // provider calls (see the top of this file).
  std::timed_mutex role_mutex_;
  // When a caller last drove (steady clock, ns): the progress thread does
  // not spin meanwhile, it would only take the role from under the caller.
  std::atomic<std::int64_t> last_drive_ns_{0};
  // Until when (steady clock, ns) callers watch the CQ (cq_left_to_callers()).
  std::atomic<std::int64_t> cq_watched_until_ns_{0};
  std::atomic<std::thread::id> role_owner_{};
  std::atomic<bool> any_failed_{false};  // a peer failed: callers drive no more
  // Whether callers may drive and post (the top of this file): not on shm.
  const bool callers_enter_provider_ = endpoint_.provider != "shm";

  std::mutex mutex_;  // guards below; taken before no other lock but Request's
  bool stopping_ = false;
  std::deque<Command> commands_;
  std::vector<std::exception_ptr> failed_;
  std::vector<std::vector<std::weak_ptr<Request>>> outstanding_;  // per peer
  std::vector<std::size_t> prune_at_;                             // per peer
  std::vector<std::string> hosts_;                                // per peer, for errors
  bool thread_exited_ = false;
  std::condition_variable thread_exited_cv_;
  bool watch_requested_ = false;
  bool progress_stuck_ = false;
  std::condition_variable watchdog_cv_;
  std::atomic<std::uint64_t> progress_turns_{0};  // bumped by every progress loop

  std::thread thread_;
  std::thread watchdog_;
};

// What make_transport returns: owns the shared state and shuts it down.
class TransportHandle final : public Transport {
 public:
  explicit TransportHandle(std::shared_ptr<LibfabricTransport> impl) : impl_(std::move(impl)) {}
  ~TransportHandle() override { impl_->shutdown(); }

  int rank() const override { return impl_->rank(); }
  int size() const override { return impl_->size(); }
  std::string name() const override { return impl_->name(); }
  std::string address() const override { return impl_->address(); }
  void connect(const std::vector<PeerInfo>& peers) override { impl_->connect(peers); }
  void add_peer(const PeerInfo& peer) override { impl_->add_peer(peer); }
  RequestPtr isendv(int peer, Tag tag, SendPieces pieces) override {
    return impl_->isendv(peer, tag, std::move(pieces));
  }
  RequestPtr irecv(int peer, Tag tag, void* data, std::size_t capacity) override {
    return impl_->irecv(peer, tag, data, capacity);
  }
  void fail_peer(int peer, std::exception_ptr error) override { impl_->fail_peer(peer, std::move(error)); }

 private:
  std::shared_ptr<LibfabricTransport> impl_;
};

}  // namespace

std::unique_ptr<Transport> make_transport(const TransportOptions& options) {
  return std::make_unique<TransportHandle>(std::make_shared<LibfabricTransport>(options));
}

}  // namespace murmur::fabric::libfabric
