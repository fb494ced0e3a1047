#include "common/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace

Subprocess::Subprocess(const Options& options) : own_group_(options.own_process_group) {
  if (options.argv.empty()) throw std::invalid_argument("Subprocess: empty argv");
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& extra : options.extra_env) {
    auto name = extra.substr(0, extra.find('=') + 1);
    std::erase_if(env_strings, [&](const std::string& s) { return s.rfind(name, 0) == 0; });
    env_strings.push_back(extra);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (options.capture_output) {
    make_pipe(out_pipe);
    try {
      make_pipe(err_pipe);
    } catch (...) {
      close_fd(out_pipe[0]);
      close_fd(out_pipe[1]);
      throw;
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!options.stdin_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, options.stdin_path.c_str(), O_RDONLY, 0);
  }
  if (options.capture_output) {
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  } else {
    if (!options.stdout_path.empty()) {
      posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, options.stdout_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    if (options.stderr_path == "=stdout") {
      posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    } else if (!options.stderr_path.empty()) {
      posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, options.stderr_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
  }

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.own_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);

  // A path is used as given, so a missing binary is reported here rather
  // than as a child exiting 127; search_path asks for the shell's PATH rule.
  int rc = options.search_path
               ? posix_spawnp(&pid_, argv[0], &actions, &attr, argv.data(), envp.data())
               : posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  stdout_fd_ = out_pipe[0];
  stderr_fd_ = err_pipe[0];
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
  if (r == pid_) status_ = status;
  else if (r < 0) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
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
  if (own_group_) ::kill(-pid_, signo);
  else signal(signo);
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
