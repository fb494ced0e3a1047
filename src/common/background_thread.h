// Threads that murmur starts in the background of someone else's process.
//
// A process-directed signal (SIGINT from Ctrl-C or a launcher, SIGTERM,
// SIGHUP, ...) goes to any thread that does not block it. A host program
// expects it on its own threads: Python runs its handlers on the main
// thread only and counts on the C handler interrupting that thread's system
// calls; a C++ program may wait for it with sigwait. Delivered to one of
// murmur's threads instead, the handler runs on a thread the host does not
// know, and a sigwait on the host's thread never sees it. So every thread murmur starts blocks the asynchronous
// signals; faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) stay with the thread that causes them. Threads that
// libfabric or Asio start from one of these threads inherit the mask.
//
// Thread-safe; start_background_thread blocks only while the thread is
// created.
#pragma once

#include <signal.h>

#include <thread>
#include <utility>

namespace murmur {

// Blocks the asynchronous signals in the calling thread until destroyed,
// then restores the previous mask. Threads created meanwhile inherit it.
class AsyncSignalsBlocked final {
 public:
  AsyncSignalsBlocked();
  ~AsyncSignalsBlocked();
  AsyncSignalsBlocked(const AsyncSignalsBlocked&) = delete;
  AsyncSignalsBlocked& operator=(const AsyncSignalsBlocked&) = delete;

 private:
  sigset_t saved_;
};

// std::thread(body), started with the asynchronous signals blocked.
template <typename Body>
std::thread start_background_thread(Body&& body) {
  AsyncSignalsBlocked blocked;
  return std::thread(std::forward<Body>(body));
}

}  // namespace murmur
