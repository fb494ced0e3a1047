// SignalFd: signals read from a file descriptor instead of a handler, so that
// an event loop can poll() them with its pipes (signalfd(2)).
//
// The constructor blocks the signals in the calling thread; threads started
// afterwards inherit the mask. A process-directed signal goes to any thread
// that does not block it, so create this before starting other threads. The
// destructor closes the descriptor and restores the previous mask.
// Not thread-safe; one owner.
#pragma once

#include <csignal>
#include <initializer_list>

namespace murmur::peer::launcher {

class SignalFd {
 public:
  // Throws std::runtime_error with errno text if signalfd fails.
  explicit SignalFd(std::initializer_list<int> signals);
  ~SignalFd();
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;

  // Readable (POLLIN) while a signal is pending. Non-blocking.
  int fd() const { return fd_; }
  // The next pending signal's number, or 0 when none is pending.
  int next();

 private:
  sigset_t set_{}, old_{};
  int fd_ = -1;
};

}  // namespace murmur::peer::launcher
