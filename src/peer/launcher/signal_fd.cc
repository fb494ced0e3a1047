#include "peer/launcher/signal_fd.h"

#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace murmur::peer::launcher {

SignalFd::SignalFd(std::initializer_list<int> signals) {
  sigemptyset(&set_);
  for (int s : signals) sigaddset(&set_, s);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
  fd_ = ::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) {
    const int error = errno;
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    throw std::runtime_error(std::string("signalfd: ") + std::strerror(error));
  }
}

SignalFd::~SignalFd() {
  ::close(fd_);
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

int SignalFd::next() {
  signalfd_siginfo info{};
  ssize_t n = ::read(fd_, &info, sizeof(info));
  return n == static_cast<ssize_t>(sizeof(info)) ? static_cast<int>(info.ssi_signo) : 0;
}

}  // namespace murmur::peer::launcher
