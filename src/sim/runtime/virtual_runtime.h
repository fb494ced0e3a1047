// VirtualRuntime: deterministic cooperative scheduling of real OS threads
// under one baton, with a virtual clock. murmur-sim runs the real gossip code
// (which blocks in threads of its own) on it: every simulated peer, and every
// thread an algorithm starts, is an OS thread that runs only while it holds
// the baton.
//
//   VirtualRuntime rt;
//   rt.spawn("peer 0", [&] { rt.sleep_for(0.5); ... });
//   rt.run();   // returns when every simulated thread has returned
//
// Scheduling: exactly one simulated thread runs at a time. The baton passes
// only when its holder blocks (wait, sleep, join) or returns; the next holder
// is the oldest runnable thread (FIFO). The virtual clock advances only when
// no simulated thread is runnable: then the earliest timed event runs (a
// min-heap ordered by (time, sequence), so events at one time run in the
// order they were scheduled). Given the same program, every run makes the
// same choices in the same order: runs are reproducible.
//
// Blocking rules (each call below that blocks names it):
//   - Only simulated threads may block, and only through this class (or the
//     primitives built on it: SimCommunicator). A simulated thread must never
//     block its OS thread any other way (a plain condition-variable wait, a
//     join, a sleep): the baton holder would stop the whole simulation.
//     Real mutexes are fine when no simulated thread holds one while it
//     blocks here (then nobody ever contends for them).
//   - No call spins: the baton passes through one condition variable per
//     thread, so a blocked OS thread sleeps in the kernel.
//   - Events (at()) run on whichever OS thread is handing the baton on, with
//     the baton held: they may notify, schedule and cancel, but never block.
//
// Failures: the first exception that escapes a simulated thread's body or an
// event is rethrown by run(). To let run() return, the other threads are
// then unwound: their cancellable blocking calls (wait, sleep_for,
// sleep_until) throw SimCancelled, now or at their next call, unless the
// thread is already unwinding an exception (a blocking destructor must
// still be able to wait for its peers). Hand-off waits (wait_handoff, join)
// are never cancelled: they end once the threads they wait for unwind.
// When no thread can run and no event is pending while threads are still
// blocked, run() reports a SimDeadlock naming each blocked thread and what it
// waits on (never hangs). If threads stay stuck even after the unwinding,
// they are abandoned (their OS threads stay blocked, and the runtime's
// internal state is deliberately leaked so they never touch freed memory)
// and the first error is rethrown anyway.
//
// Ownership: the runtime owns the OS threads of spawn(); start_thread hands
// its OS thread to the caller, who must join it with join().
// Thread safety: spawn() and run() from the driving (non-simulated) thread
// before the run, or spawn/start_thread from a simulated thread during it.
// Every other method from the baton holder only (a simulated thread or an
// event), except now(), which any thread may read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace murmur::sim::runtime {

// What a cancellable blocking call throws once another simulated thread has
// failed. Not an error of its own: run() rethrows the original failure.
class SimCancelled : public std::runtime_error {
 public:
  SimCancelled() : std::runtime_error("simulation cancelled: another simulated thread failed") {}
};

// run(): every live simulated thread is blocked and no event can wake one.
class SimDeadlock : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class VirtualRuntime final {
 public:
  using EventId = std::uint64_t;

  VirtualRuntime();
  // Unwinds threads that were spawned but never run (their bodies are
  // skipped) and joins the OS threads. Never throws.
  ~VirtualRuntime();
  VirtualRuntime(const VirtualRuntime&) = delete;
  VirtualRuntime& operator=(const VirtualRuntime&) = delete;

  // Registers a simulated thread that becomes runnable now (at the back of
  // the run queue). Does not block. `name` appears in traces and deadlock
  // reports.
  void spawn(std::string name, std::function<void()> body);
  // The same, for Communicator::start_thread: returns the OS thread, which
  // the caller must pass to join().
  std::thread start_thread(std::string name, std::function<void()> body);
  // Blocks (virtually; a hand-off wait) until the thread's body has
  // returned, then joins the OS thread. Simulated threads only.
  void join(std::thread& thread);

  // Virtual seconds since the start of the run (0 at first).
  double now() const;
  // Block the calling simulated thread until now() + seconds (cancellable).
  void sleep_for(double seconds);
  void sleep_until(double time);

  // Runs `callback` with the baton once the clock reaches `time` (>= now()).
  // Returns an id for cancel(). Baton holder only.
  EventId at(double time, std::function<void()> callback);
  // A cancelled event never runs and never advances the clock. Cancelling
  // an event that already ran (or an unknown id) does nothing.
  void cancel(EventId id);

  // Blocks the calling simulated thread until notify_all(key) (cancellable).
  // Returns without a wake-up guarantee of anything but the notify: callers
  // re-check their condition in a loop. `what` is for deadlock reports.
  void wait(const void* key, std::string what);
  // The same, never cancelled: for hand-offs inside one peer (an
  // algorithm's caller and its communication thread), which end by
  // themselves once the other side unwinds.
  void wait_handoff(const void* key, std::string what);
  // Makes every thread waiting on `key` runnable, in the order they began
  // waiting. Does not block; does nothing without waiters.
  void notify_all(const void* key);

  // True when the caller is one of this runtime's simulated threads.
  bool in_simulated_thread() const;

  // Drives the simulation until every simulated thread has returned.
  // Blocks the calling (non-simulated) thread. Rethrows the first failure;
  // throws SimDeadlock (see above). Call once.
  void run();

  // With tracing on, every baton hand-off appends "t=<time> <thread>" (and
  // every event "t=<time> event") to trace(): two runs of one program give
  // equal traces. Off by default; set before run().
  void set_tracing(bool on);
  const std::vector<std::string>& trace() const;
  // Baton hand-offs so far (each is one OS context switch): a cost measure.
  std::uint64_t switches() const;
  std::size_t threads_started() const;

 private:
  struct State;
  std::unique_ptr<State> state_;  // leaked on purpose when threads are abandoned
};

}  // namespace murmur::sim::runtime
