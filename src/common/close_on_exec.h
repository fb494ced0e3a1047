// Marks a descriptor close-on-exec, for sockets made by libraries that do not
// (Boost.Asio opens and accepts without SOCK_CLOEXEC).
//
// Why both this and Subprocess closing every descriptor in its children: a
// program embedding murmur may start processes its own way (system(),
// popen(), a fork and exec of its own), and none of them should hold a
// murmur port. There is a window between the socket's creation and this
// call in which another thread's fork+exec could still copy it; Subprocess's
// closefrom has no such window, so murmur's own children are covered either
// way. Thread-safe; never blocks; failures are ignored (the worst case is
// the behaviour without it).
#pragma once

#include <fcntl.h>

namespace murmur {

inline void set_close_on_exec(int fd) {
  if (fd < 0) return;
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0 && (flags & FD_CLOEXEC) == 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

}  // namespace murmur
