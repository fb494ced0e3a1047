#include "common/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace murmur {

namespace {

// Both ends close-on-exec, so that no other child inherits them (a write end
// held by a sibling would keep the reader from ever seeing EOF); the child's
// dup2 onto 1 or 2 clears the flag on its copy.
void make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// This process's environment, with each "NAME=value" of `extra` replacing
// any NAME already there.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  for (const auto& assignment : extra) {
    auto name = assignment.substr(0, assignment.find('=') + 1);
    std::erase_if(env, [&](const std::string& s) { return s.rfind(name, 0) == 0; });
    env.push_back(assignment);
  }
  return env;
}

// Null-terminated pointers into `strings`, as posix_spawn takes argv and
// envp; valid while `strings` lives unchanged.
std::vector<char*> c_pointers(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// The stdout and stderr pipes of capture_output (both open, or neither),
// and the stdin pipe of stdin_data.
struct OutputPipes {
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  int in[2] = {-1, -1};

  // The read end stays blocking: it becomes the child's stdin.
  void open_stdin(const std::string& data) {
    if (data.size() > PIPE_BUF) throw std::invalid_argument("Subprocess: stdin_data is over PIPE_BUF bytes");
    if (::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    // Fits the pipe's buffer: written whole at once, before the child runs.
    if (::write(in[1], data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
      const int error = errno;
      close_fd(in[0]);
      close_fd(in[1]);
      throw std::runtime_error(std::string("write to the stdin pipe: ") + std::strerror(error));
    }
    close_fd(in[1]);
  }

  void open() {
    make_pipe(out);
    try {
      make_pipe(err);
    } catch (...) {
      close_fd(out[0]);
      close_fd(out[1]);
      throw;
    }
  }
};

// Owns a posix_spawn_file_actions_t: where the child's stdin, stdout and
// stderr go, and that it inherits nothing else.
class FileActions final {
 public:
  FileActions(const Subprocess::Options& options, const OutputPipes& pipes) {
    posix_spawn_file_actions_init(&actions_);
    set_streams(options, pipes);
    // Last, after the dup2s above: the child keeps 0, 1 and 2 and nothing
    // else, whether or not whoever opened a descriptor (this process, a
    // library, a thread racing this spawn) asked for close-on-exec. Without
    // it every peer murmur-run started held the launcher's rendezvous
    // listening socket, so the port stayed bound while any peer lived.
    // glibc runs it in the child between fork and exec as close_range(3,
    // ~0U, 0), falling back to closing what /proc/self/fd lists.
    posix_spawn_file_actions_addclosefrom_np(&actions_, STDERR_FILENO + 1);
  }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  void set_streams(const Subprocess::Options& options, const OutputPipes& pipes) {
    if (!options.stdin_data.empty()) {
      posix_spawn_file_actions_adddup2(&actions_, pipes.in[0], STDIN_FILENO);
    } else if (!options.stdin_path.empty()) {
      posix_spawn_file_actions_addopen(&actions_, STDIN_FILENO, options.stdin_path.c_str(), O_RDONLY, 0);
    }
    if (options.capture_output) {
      posix_spawn_file_actions_adddup2(&actions_, pipes.out[1], STDOUT_FILENO);
      posix_spawn_file_actions_adddup2(&actions_, pipes.err[1], STDERR_FILENO);
      return;
    }
    if (!options.stdout_path.empty()) {
      posix_spawn_file_actions_addopen(&actions_, STDOUT_FILENO, options.stdout_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    if (options.stderr_path == "=stdout") {
      posix_spawn_file_actions_adddup2(&actions_, STDOUT_FILENO, STDERR_FILENO);
    } else if (!options.stderr_path.empty()) {
      posix_spawn_file_actions_addopen(&actions_, STDERR_FILENO, options.stderr_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
  }

  posix_spawn_file_actions_t actions_;
};

// Owns a posix_spawnattr_t: an empty signal mask and default actions for the
// signals a launcher blocks or ignores (see subprocess.h), and the child's
// own process group when asked.
class SpawnAttributes final {
 public:
  explicit SpawnAttributes(bool own_process_group) {
    posix_spawnattr_init(&attr_);
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) sigaddset(&defaults, s);
    posix_spawnattr_setsigmask(&attr_, &empty);
    posix_spawnattr_setsigdefault(&attr_, &defaults);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (own_process_group) {
      flags |= POSIX_SPAWN_SETPGROUP;
      posix_spawnattr_setpgroup(&attr_, 0);
    }
    posix_spawnattr_setflags(&attr_, flags);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  const posix_spawnattr_t* get() const { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

}  // namespace

Subprocess::Subprocess(const Options& options) : own_group_(options.own_process_group) {
  if (options.argv.empty()) throw std::invalid_argument("Subprocess: empty argv");
  const std::vector<char*> argv = c_pointers(options.argv);
  const std::vector<std::string> env = child_environment(options.extra_env);
  const std::vector<char*> envp = c_pointers(env);

  OutputPipes pipes;
  if (!options.stdin_data.empty()) pipes.open_stdin(options.stdin_data);
  if (options.capture_output) {
    try {
      pipes.open();
    } catch (...) {
      close_fd(pipes.in[0]);
      throw;
    }
  }
  int rc = 0;
  {
    const FileActions actions(options, pipes);
    const SpawnAttributes attr(options.own_process_group);
    // A path is used as given, so a missing binary is reported here rather
    // than as a child exiting 127; search_path asks for the shell's PATH rule.
    rc = options.search_path ? posix_spawnp(&pid_, argv[0], actions.get(), attr.get(), argv.data(), envp.data())
                             : posix_spawn(&pid_, argv[0], actions.get(), attr.get(), argv.data(), envp.data());
  }
  close_fd(pipes.in[0]);
  close_fd(pipes.out[1]);
  close_fd(pipes.err[1]);
  stdout_fd_ = pipes.out[0];
  stderr_fd_ = pipes.err[0];
  if (rc != 0) {
    pid_ = -1;
    close_fd(stdout_fd_);
    close_fd(stderr_fd_);
    throw std::runtime_error("cannot start '" + options.argv[0] + "': " + std::strerror(rc));
  }
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(other.pid_),
      own_group_(other.own_group_),
      stdout_fd_(other.stdout_fd_),
      stderr_fd_(other.stderr_fd_),
      status_(other.status_) {
  other.pid_ = -1;
  other.stdout_fd_ = -1;
  other.stderr_fd_ = -1;
}

Subprocess::~Subprocess() {
  if (running()) {
    ::kill(own_group_ ? -pid_ : pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
}

std::optional<int> Subprocess::try_wait() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_)
    status_ = status;
  else if (r < 0)
    throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  return status_;
}

std::optional<int> Subprocess::wait_until(std::chrono::steady_clock::time_point deadline) {
  if (status_ || pid_ <= 0) return status_;
  auto step = std::chrono::milliseconds(1);
  for (;;) {
    if (try_wait()) return status_;
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(step, deadline - now));
    step = std::min(step * 2, std::chrono::milliseconds(50));
  }
}

void Subprocess::signal(int signo) {
  if (running()) ::kill(pid_, signo);
}

void Subprocess::signal_group(int signo) {
  if (pid_ <= 0) return;
  if (own_group_)
    ::kill(-pid_, signo);
  else
    signal(signo);
}

std::string Subprocess::describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "stopped (status " + std::to_string(status) + ")";
}

}  // namespace murmur
