#include "sim/runtime/virtual_runtime.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "common/check.h"
#include "common/log.h"

namespace murmur::sim::runtime {

// One mutex (mutex) guards everything below; the baton is `running`: only
// the thread it names runs simulated code. Every OS thread waits for the
// baton on its own condition variable, so a hand-off wakes exactly one.
// User code (bodies, events) runs with the mutex released: it may call back
// in (notify, at, spawn) and blocks only through block().
struct VirtualRuntime::State {
  enum class Phase { kRunnable, kBlocked, kFinished };

  struct Thread {
    std::string name;
    std::function<void()> body;
    std::thread os;  // spawn() threads; start_thread() hands it out
    std::condition_variable cv;
    Phase phase = Phase::kRunnable;
    const void* key = nullptr;  // what it waits on, while kBlocked
    std::string what;
    bool cancellable = false;
    bool cancel_woken = false;  // woken by the unwinding: throw SimCancelled
    EventId timer = 0;          // its sleep's wake-up event, or 0
    char sleep_key = 0;         // addresses used as wait keys
    char exit_key = 0;
  };

  struct Event {
    double time;
    EventId id;  // also the FIFO sequence among equal times
    std::function<void()> callback;
  };
  // std::push_heap keeps the largest first: "later" is larger.
  static bool later(const Event& a, const Event& b) { return a.time != b.time ? a.time > b.time : a.id > b.id; }

  std::mutex mutex;
  Thread driver;  // the thread in run(): holds the baton when nobody can run
  Thread* running = &driver;
  std::deque<std::unique_ptr<Thread>> threads;            // creation order
  std::unordered_map<std::thread::id, Thread*> by_os_id;  // start_thread()'s, until joined
  std::deque<Thread*> runnable;
  std::unordered_map<const void*, std::vector<Thread*>> waiters;
  std::vector<Event> events;                // heap
  std::unordered_set<EventId> live_events;  // in the heap and not cancelled
  std::size_t dead_events = 0;              // in the heap, cancelled
  EventId next_event = 1;
  std::atomic<double> now{0.0};
  std::size_t live = 0;  // threads not finished
  bool ran = false;
  bool in_event = false;
  bool cancelling = false;   // unwinding after error
  bool skip_bodies = false;  // destroyed without run(): threads exit at once
  std::exception_ptr error;
  bool tracing = false;
  std::vector<std::string> trace;
  std::uint64_t switches = 0;

  // ---- baton -------------------------------------------------------------

  void record(const char* who) {
    char line[64];
    std::snprintf(line, sizeof line, "t=%.9g ", now.load(std::memory_order_relaxed));
    trace.push_back(line + std::string(who));
  }

  void hand_to(Thread* next) {
    running = next;
    ++switches;
    if (tracing) record(next == &driver ? "(driver)" : next->name.c_str());
    next->cv.notify_one();
  }

  // The baton holder gives it up: to the oldest runnable thread, else after
  // running due events, else to the driver (done, or stuck). Returns with
  // the lock held; the caller then waits for the baton on its own cv.
  void dispatch(std::unique_lock<std::mutex>& lock) {
    for (;;) {
      if (!runnable.empty()) {
        Thread* next = runnable.front();
        runnable.pop_front();
        return hand_to(next);
      }
      if (events.empty()) return hand_to(&driver);
      std::pop_heap(events.begin(), events.end(), later);
      Event event = std::move(events.back());
      events.pop_back();
      if (live_events.erase(event.id) == 0) {  // cancelled
        --dead_events;
        continue;
      }
      now.store(event.time, std::memory_order_relaxed);
      if (tracing) record("event");
      in_event = true;
      lock.unlock();
      std::exception_ptr failure;
      try {
        event.callback();
      } catch (...) {
        failure = std::current_exception();
      }
      event.callback = nullptr;  // its captures die without the lock held
      lock.lock();
      in_event = false;
      if (failure) fail(failure);
    }
  }

  void wait_for_baton(std::unique_lock<std::mutex>& lock, Thread* self) {
    self->cv.wait(lock, [&] { return running == self; });
  }

  // ---- blocking ----------------------------------------------------------

  // The simulated thread this OS thread runs, if any.
  static thread_local State* tls_state;
  static thread_local Thread* tls_thread;

  Thread* self() {
    if (tls_state != this || tls_thread == nullptr)
      throw InvariantError("VirtualRuntime: a blocking call outside a simulated thread of this runtime");
    if (in_event) throw InvariantError("VirtualRuntime: an event callback may not block");
    return tls_thread;
  }

  static bool unwinding() { return std::uncaught_exceptions() > 0; }

  // Blocks `t` on `key` until notified (or cancel-woken when cancellable).
  void block(std::unique_lock<std::mutex>& lock, Thread* t, const void* key, std::string what, bool cancellable) {
    t->phase = Phase::kBlocked;
    t->key = key;
    t->what = std::move(what);
    t->cancellable = cancellable;
    waiters[key].push_back(t);
    dispatch(lock);
    wait_for_baton(lock, t);
    if (t->cancel_woken) {
      t->cancel_woken = false;
      throw SimCancelled();
    }
  }

  void make_runnable(Thread* t) {
    t->phase = Phase::kRunnable;
    t->key = nullptr;
    runnable.push_back(t);
  }

  void notify(const void* key) {
    auto it = waiters.find(key);
    if (it == waiters.end()) return;
    std::vector<Thread*> woken = std::move(it->second);
    waiters.erase(it);
    for (Thread* t : woken) make_runnable(t);
  }

  EventId schedule(double time, std::function<void()> callback) {
    const double t = now.load(std::memory_order_relaxed);
    MURMUR_CHECK_GE(time, t);
    const EventId id = next_event++;
    events.push_back(Event{time, id, std::move(callback)});
    std::push_heap(events.begin(), events.end(), later);
    live_events.insert(id);
    return id;
  }

  // Cancelled events stay in the heap until their time, and most timeouts
  // (one per wait_all) are cancelled long before it: drop them in bulk once
  // they are half the heap, so a long run does not pile them up.
  void cancel(EventId id) {
    if (live_events.erase(id) == 0) return;
    if (++dead_events < 1024 || dead_events * 2 < events.size()) return;
    std::erase_if(events, [&](const Event& e) { return live_events.count(e.id) == 0; });
    std::make_heap(events.begin(), events.end(), later);
    dead_events = 0;
  }

  // ---- failure -----------------------------------------------------------

  // First failure wins; then wake every cancellable waiter to unwind.
  void fail(std::exception_ptr failure) {
    if (!error) error = std::move(failure);
    if (cancelling) return;
    cancelling = true;
    for (auto& t : threads) {
      if (t->phase != Phase::kBlocked || !t->cancellable) continue;
      auto& list = waiters[t->key];
      list.erase(std::find(list.begin(), list.end(), t.get()));
      if (list.empty()) waiters.erase(t->key);
      if (t->timer != 0) cancel(t->timer);
      t->timer = 0;
      t->cancel_woken = true;
      make_runnable(t.get());
    }
  }

  std::string describe_stuck() const {
    std::ostringstream os;
    std::size_t blocked = 0;
    for (const auto& t : threads) blocked += t->phase == Phase::kBlocked;
    os << "virtual runtime deadlock at t=" << now.load() << " s: no simulated thread can run and no event is pending; "
       << blocked << " thread(s) blocked:";
    std::size_t shown = 0;
    for (const auto& t : threads) {
      if (t->phase != Phase::kBlocked) continue;
      if (shown++ == 16) {
        os << " ... and " << blocked - 16 << " more";
        break;
      }
      os << (shown > 1 ? ";" : "") << " '" << t->name << "' waits on " << t->what;
    }
    return os.str();
  }

  // ---- threads -----------------------------------------------------------

  void thread_main(Thread* t);

  Thread* add_thread(std::string name, std::function<void()> body) {
    auto owned = std::make_unique<Thread>();
    Thread* t = owned.get();
    t->name = std::move(name);
    t->body = std::move(body);
    threads.push_back(std::move(owned));
    ++live;
    runnable.push_back(t);
    return t;
  }

  // Runs until every thread finished or nothing can move; returns true
  // when threads are left stuck.
  bool drive(std::unique_lock<std::mutex>& lock) {
    for (;;) {
      dispatch(lock);
      wait_for_baton(lock, &driver);
      if (live == 0) return false;
      if (cancelling) return true;  // stuck even while unwinding
      fail(std::make_exception_ptr(SimDeadlock(describe_stuck())));
    }
  }
};

thread_local VirtualRuntime::State* VirtualRuntime::State::tls_state = nullptr;
thread_local VirtualRuntime::State::Thread* VirtualRuntime::State::tls_thread = nullptr;

void VirtualRuntime::State::thread_main(Thread* t) {
  tls_state = this;
  tls_thread = t;
  std::unique_lock lock(mutex);
  wait_for_baton(lock, t);
  const bool skip = skip_bodies;
  lock.unlock();
  std::exception_ptr failure;
  if (!skip) {
    try {
      t->body();
    } catch (const SimCancelled&) {
      // Unwound on purpose: run() reports the failure that caused it.
    } catch (...) {
      failure = std::current_exception();
    }
  }
  t->body = nullptr;  // captured state dies while this thread still holds the baton
  lock.lock();
  if (failure) fail(failure);
  t->phase = Phase::kFinished;
  --live;
  notify(&t->exit_key);
  dispatch(lock);
  // The baton is gone: this OS thread touches nothing of the runtime again.
}

VirtualRuntime::VirtualRuntime() : state_(std::make_unique<State>()) { state_->driver.name = "(driver)"; }

VirtualRuntime::~VirtualRuntime() {
  State& s = *state_;
  bool stuck = false;
  {
    std::unique_lock lock(s.mutex);
    if (!s.ran && s.live > 0) {
      s.ran = true;
      s.skip_bodies = true;
      stuck = s.drive(lock);
    }
  }
  if (stuck) {
    (void)state_.release();  // see the header: abandoned threads keep it
    return;
  }
  for (auto& t : s.threads)
    if (t->os.joinable()) t->os.join();
}

void VirtualRuntime::spawn(std::string name, std::function<void()> body) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  State::Thread* t = s.add_thread(std::move(name), std::move(body));
  t->os = std::thread(&State::thread_main, &s, t);
}

std::thread VirtualRuntime::start_thread(std::string name, std::function<void()> body) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  State::Thread* t = s.add_thread(std::move(name), std::move(body));
  std::thread os(&State::thread_main, &s, t);
  s.by_os_id[os.get_id()] = t;
  return os;
}

void VirtualRuntime::join(std::thread& thread) {
  State& s = *state_;
  {
    std::unique_lock lock(s.mutex);
    State::Thread* self = s.self();
    auto it = s.by_os_id.find(thread.get_id());
    MURMUR_CHECK(it != s.by_os_id.end());
    State::Thread* target = it->second;
    while (target->phase != State::Phase::kFinished)
      s.block(lock, self, &target->exit_key, "join of '" + target->name + "'", /*cancellable=*/false);
    s.by_os_id.erase(it);
  }
  // The target has given the baton away and only returns from its OS thread.
  thread.join();
}

double VirtualRuntime::now() const { return state_->now.load(std::memory_order_relaxed); }

void VirtualRuntime::sleep_for(double seconds) { sleep_until(now() + std::max(0.0, seconds)); }

void VirtualRuntime::sleep_until(double time) {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  State::Thread* self = s.self();
  const bool cancellable = !State::unwinding();
  if (s.cancelling && cancellable) throw SimCancelled();
  time = std::max(time, s.now.load(std::memory_order_relaxed));
  self->timer = s.schedule(time, [&s, self] {
    std::lock_guard inner(s.mutex);
    self->timer = 0;
    s.notify(&self->sleep_key);
  });
  char what[64];
  std::snprintf(what, sizeof what, "sleep until t=%.9g", time);
  s.block(lock, self, &self->sleep_key, what, cancellable);
}

VirtualRuntime::EventId VirtualRuntime::at(double time, std::function<void()> callback) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  return s.schedule(time, std::move(callback));
}

void VirtualRuntime::cancel(EventId id) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  s.cancel(id);
}

void VirtualRuntime::wait(const void* key, std::string what) {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  State::Thread* self = s.self();
  const bool cancellable = !State::unwinding();
  if (s.cancelling && cancellable) throw SimCancelled();
  s.block(lock, self, key, std::move(what), cancellable);
}

void VirtualRuntime::wait_handoff(const void* key, std::string what) {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  s.block(lock, s.self(), key, std::move(what), /*cancellable=*/false);
}

void VirtualRuntime::notify_all(const void* key) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  s.notify(key);
}

bool VirtualRuntime::in_simulated_thread() const {
  return State::tls_state == state_.get() && State::tls_thread != nullptr;
}

void VirtualRuntime::run() {
  State& s = *state_;
  MURMUR_CHECK(!in_simulated_thread());
  std::exception_ptr error;
  bool stuck = false;
  {
    std::unique_lock lock(s.mutex);
    MURMUR_CHECK(!s.ran);
    s.ran = true;
    stuck = s.drive(lock);
    error = s.error;
  }
  if (stuck) {
    std::string names;
    std::size_t count = 0;
    for (auto& t : s.threads) {
      if (t->phase == State::Phase::kFinished) {
        if (t->os.joinable()) t->os.join();
        continue;
      }
      if (t->os.joinable()) t->os.detach();
      if (count++ < 8) names += (names.empty() ? "'" : ", '") + t->name + "'";
    }
    logger("sim")->error(
        "virtual runtime: {} simulated thread(s) still blocked after the failure was unwound ({}{}); "
        "they are abandoned",
        count, names, count > 8 ? ", ..." : "");
    (void)state_.release();  // see the header: abandoned threads keep it
    state_ = std::make_unique<State>();
    state_->ran = true;
  } else {
    for (auto& t : s.threads)
      if (t->os.joinable()) t->os.join();
  }
  if (error) std::rethrow_exception(error);
}

void VirtualRuntime::set_tracing(bool on) {
  std::lock_guard lock(state_->mutex);
  state_->tracing = on;
}

const std::vector<std::string>& VirtualRuntime::trace() const { return state_->trace; }

std::uint64_t VirtualRuntime::switches() const {
  std::lock_guard lock(state_->mutex);
  return state_->switches;
}

std::size_t VirtualRuntime::threads_started() const {
  std::lock_guard lock(state_->mutex);
  return state_->threads.size();
}

}  // namespace murmur::sim::runtime
