#include "tests/support/forked_child.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace murmur::testing {

ForkedChild::ForkedChild(const std::function<int(int fd)>& body) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw std::system_error(errno, std::generic_category(), "ForkedChild: socketpair");
  pid_ = ::fork();
  if (pid_ < 0) {
    const int error = errno;
    ::close(ends[0]);
    ::close(ends[1]);
    throw std::system_error(error, std::generic_category(), "ForkedChild: fork");
  }
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(ends[0]);
    int status = 3;
    try {
      status = body(ends[1]);
    } catch (...) {
      status = 3;
    }
    ::_exit(status);
  }
  ::close(ends[1]);
  fd_ = ends[0];
}

ForkedChild::~ForkedChild() {
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0 && !reaped_ && ::kill(pid_, SIGKILL) == 0) ::waitpid(pid_, nullptr, 0);
}

int ForkedChild::wait() {
  if (reaped_) return -1;
  int status = 0;
  pid_t reaped = -1;
  while ((reaped = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return reaped < 0 ? -1 : status;
}

bool send_port(int fd, std::uint16_t port) {
  return ::write(fd, &port, sizeof(port)) == static_cast<ssize_t>(sizeof(port));
}

std::optional<std::uint16_t> receive_port(int fd) {
  std::uint16_t port = 0;
  if (::read(fd, &port, sizeof(port)) != static_cast<ssize_t>(sizeof(port))) return std::nullopt;
  return port;
}

}  // namespace murmur::testing
