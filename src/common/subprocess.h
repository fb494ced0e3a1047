// Subprocess: one child process started with posix_spawn, owned by this
// object. Used by launchers, the demo and multi-process tests.
//
// Ownership: the destructor kills (SIGKILL) and reaps a child that is still
// running, so no peer outlives its owner by accident.
// Thread safety: none; one owner thread.
// Blocking: wait_until() sleeps in short steps on waitpid(WNOHANG) (there is
// no portable way to wait for a child with a deadline without a signal
// handler); it never spins.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace murmur {

class Subprocess final {
 public:
  struct Options {
    std::vector<std::string> argv;        // argv[0] is the program path
    std::vector<std::string> extra_env;   // "NAME=value" added to this environment
    std::string stdout_path;              // empty: inherit
    std::string stderr_path;              // empty: inherit; "=stdout": same as stdout
  };

  // Starts the child. Throws std::runtime_error naming the program and errno
  // text when it cannot be started (e.g. the binary does not exist).
  explicit Subprocess(const Options& options);
  ~Subprocess();
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&&) = delete;
  Subprocess(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }

  // Waits until the child exits or the deadline passes. Returns the raw
  // waitpid status, or nullopt on deadline.
  std::optional<int> wait_until(std::chrono::steady_clock::time_point deadline);
  void signal(int signo);
  bool running() const { return pid_ > 0 && !status_; }

  // "exited with status 3", "killed by signal 9 (Killed)".
  static std::string describe_status(int status);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace murmur
