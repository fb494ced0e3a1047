// Subprocess: one child process started with posix_spawn, owned by this
// object. Used by launchers (murmur-run), the demo and multi-process tests.
//
// Ownership: the destructor kills (SIGKILL; the whole process group when the
// child leads one) and reaps a child that is still running, so no peer
// outlives its owner by accident. Pipe ends from capture_output are owned and
// closed by this object.
// Thread safety: none; one owner thread.
// Blocking: wait_until() sleeps in short steps on waitpid(WNOHANG) (there is
// no portable way to wait for a child with a deadline without a signal
// handler); it never spins. try_wait() never blocks: callers that own an
// event loop call it when SIGCHLD arrives (e.g. through a signalfd).
// Descriptors: the child inherits its standard streams (0, 1, 2) and no
// other descriptor, close-on-exec or not (closed between fork and exec).
// Signals: the child starts with an empty signal mask and default actions for
// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE and SIGCHLD, whatever the parent
// blocked or ignored (a launcher blocks them to read them from a signalfd).
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
    std::vector<std::string> argv;       // argv[0] is the program path
    std::vector<std::string> extra_env;  // "NAME=value" added to this environment
    std::string stdout_path;             // empty: inherit
    std::string stderr_path;             // empty: inherit; "=stdout": same as stdout
    std::string stdin_path;              // empty: inherit; e.g. "/dev/null"
    // Non-empty: the child's stdin is a pipe holding these bytes, then
    // end-of-file (stdin_path is ignored). For a secret that must not be on
    // a command line (murmur-run hands remote peers their job token so). At
    // most PIPE_BUF (4096) bytes, so that writing it never blocks.
    std::string stdin_data;
    // stdout and stderr each go to a pipe whose read end is stdout_fd() /
    // stderr_fd() (non-blocking, close-on-exec); the *_path fields are then
    // ignored.
    bool capture_output = false;
    // argv[0] without a '/' is looked up in PATH (posix_spawnp), as a shell
    // would; with a '/' it is used as given.
    bool search_path = false;
    // The child leads a new process group (pgid = its pid), so that
    // signal_group() also reaches what it starts (shell wrappers, ssh).
    bool own_process_group = false;
  };

  // Starts the child. Throws std::runtime_error "cannot start '<argv[0]>':
  // <errno text>" when it cannot be started (e.g. the binary does not exist;
  // glibc's posix_spawn reports a failed exec here, not as exit status 127).
  explicit Subprocess(const Options& options);
  ~Subprocess();
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&&) = delete;
  Subprocess(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // Read ends of the output pipes; -1 without capture_output.
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }

  // Waits until the child exits or the deadline passes. Returns the raw
  // waitpid status, or nullopt on deadline.
  std::optional<int> wait_until(std::chrono::steady_clock::time_point deadline);
  // Reaps the child if it has exited; never blocks. The raw waitpid status,
  // or nullopt while it runs.
  std::optional<int> try_wait();
  // Signals the child alone; nothing once it has been reaped.
  void signal(int signo);
  // Signals the child's process group (own_process_group), else the child.
  // Also after the child was reaped: descendants that stayed in its group
  // (e.g. a wrapper's children) still get it; its pid cannot have been
  // reused as a group id while any of them lives.
  void signal_group(int signo);
  bool running() const { return pid_ > 0 && !status_; }
  std::optional<int> status() const { return status_; }

  // "exited with status 3", "killed by signal 9 (Killed)".
  static std::string describe_status(int status);

 private:
  pid_t pid_ = -1;
  bool own_group_ = false;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::optional<int> status_;
};

}  // namespace murmur
