#include "common/background_thread.h"

#include <pthread.h>

namespace murmur {

namespace {

sigset_t async_signals() {
  sigset_t set;
  sigfillset(&set);
  // Synchronous faults are delivered to the faulting thread whatever the
  // mask says, and blocking them makes the kernel kill the process instead
  // of running a handler (sanitizers', Python's faulthandler): leave them.
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) sigdelset(&set, fault);
  // A sampling profiler's timer (SIGPROF) should see murmur's threads too.
  sigdelset(&set, SIGPROF);
  return set;
}

}  // namespace

AsyncSignalsBlocked::AsyncSignalsBlocked() {
  const sigset_t block = async_signals();
  pthread_sigmask(SIG_BLOCK, &block, &saved_);
}

AsyncSignalsBlocked::~AsyncSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

}  // namespace murmur
