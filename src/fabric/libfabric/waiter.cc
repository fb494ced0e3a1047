#include "fabric/libfabric/waiter.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>

#include "fabric/errors.h"

namespace murmur::fabric::libfabric {
namespace {

[[noreturn]] void throw_errno(const char* call) { throw FabricError(std::string(call) + ": " + std::strerror(errno)); }

}  // namespace

Waiter::Waiter(fid_fabric* fabric, fid_cq* cq, int cq_fd, bool sread, Doorbell* bell)
    : fabric_(fabric), cq_(cq), cq_fd_(cq_fd), sread_(sread), bell_(cq_fd < 0 && !sread ? bell : nullptr) {
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) throw_errno("eventfd");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    ::close(event_fd_);
    throw_errno("epoll_create1");
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = event_fd_;
  int ret = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &event);
  if (ret == 0 && cq_fd_ >= 0 && !sread_) {
    event.data.fd = cq_fd_;
    ret = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, cq_fd_, &event);
  }
  if (ret != 0) {
    const int saved = errno;
    ::close(epoll_fd_);
    ::close(event_fd_);
    errno = saved;
    throw_errno("epoll_ctl");
  }
}

Waiter::~Waiter() {
  ::close(epoll_fd_);
  ::close(event_fd_);
}

void Waiter::wake() {
  if (sread_) {
    // Thread-safe by its purpose: it interrupts a thread blocked in sread
    // (or makes the next one return at once); the eventfd below ends a nap.
    fi_cq_signal(cq_);
  }
  if (bell_ != nullptr) {
    bell_->ring();
    return;
  }
  const std::uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: a wake-up is pending.
  [[maybe_unused]] const ssize_t n = ::write(event_fd_, &one, sizeof(one));
}

void Waiter::drain_eventfd() {
  std::uint64_t value = 0;
  [[maybe_unused]] const ssize_t n = ::read(event_fd_, &value, sizeof(value));
}

bool Waiter::may_block() {
  if (sread_ || cq_fd_ < 0) return true;
  // fi_trywait fails (-FI_EAGAIN) when the provider still has progress to
  // make or completions to report: go round again instead of sleeping.
  fid_t fids[1] = {&cq_->fid};
  return fi_trywait(fabric_, fids, 1) == FI_SUCCESS;
}

bool Waiter::wait(std::chrono::microseconds max_wait, bool only_rings_bring_work) {
  std::chrono::microseconds timeout = max_wait;
  if (sread_) {
    // Count 0: returns once the CQ holds entries (the engine reads them),
    // on fi_cq_signal, or after the timeout, in whole milliseconds.
    const auto ms = std::max<long>(1, static_cast<long>((timeout.count() + 999) / 1000));
    fi_cq_tagged_entry none;
    [[maybe_unused]] const ssize_t ret = fi_cq_sread(cq_, &none, 0, nullptr, static_cast<int>(ms));
    // wake() wrote the eventfd too: read it here, so that it neither ends
    // a later nap for nothing nor goes unreported.
    return wait_for_wake(std::chrono::microseconds::zero());
  }
  if (cq_fd_ < 0) {
    // With a doorbell, when only a ring can bring work: the whole wait, no
    // back-off.
    if (bell_ == nullptr || !only_rings_bring_work) {
      timeout = std::min(timeout, backoff_);
      const auto cap = ++idle_rounds_ > kDeepIdleRounds ? kDeepIdleBackoff : kMaxBackoff;
      backoff_ = std::min(backoff_ * 2, cap);
    }
    if (bell_ != nullptr) {
      bell_->wait(bell_seen_, timeout);
      return bell_->value() != bell_seen_;
    }
  }
  epoll_event events[2];
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1000000) * 1000;
  int n = epoll_pwait2(epoll_fd_, events, 2, &ts, nullptr);
  if (n < 0 && errno == ENOSYS) {  // kernels before 5.11: millisecond timeouts
    const auto ms = (timeout.count() + 999) / 1000;
    n = epoll_wait(epoll_fd_, events, 2, static_cast<int>(ms));
  }
  bool woken = false;
  for (int i = 0; i < n; ++i) {
    if (events[i].data.fd != event_fd_) continue;
    drain_eventfd();
    woken = true;
  }
  return woken;
}

bool Waiter::wait_for_wake(std::chrono::microseconds timeout) {
  pollfd fd{event_fd_, POLLIN, 0};
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1000000) * 1000;
  if (::ppoll(&fd, 1, &ts, nullptr) <= 0) return false;
  drain_eventfd();
  return true;
}

void Waiter::nap(std::chrono::microseconds timeout) {
  if (bell_ != nullptr) {
    // wake() rings the bell; any ring since the thread last looked for
    // work may have brought some.
    bell_->wait(bell_seen_, timeout);
    return;
  }
  wait_for_wake(timeout);
}

}  // namespace murmur::fabric::libfabric
