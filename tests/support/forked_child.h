// ForkedChild: a child process for tests that stop, kill or watch one (a
// member killed mid-job, a server stopped with SIGSTOP).
//
// Construct it before the test starts any thread (a server's, a client's):
// fork copies only the calling thread, and a child forked while another
// thread held a lock (a logger's, say) can deadlock before it runs a line;
// one forked after them once never set its key within 5 s in a parallel
// ctest run. What the child needs from the parent's threads (a server's
// port) comes afterwards through the socket pair, in either direction.
//
// The child runs `body` with its end of the pair and _exits with body's
// return value (3 if body throws): no destructor or atexit handler of the
// test process runs in it. It dies with the test process
// (PR_SET_PDEATHSIG), and the destructor kills and reaps a child still
// running, so a failed test leaves no process holding ctest's output open.
// Thread safety: one thread uses an instance.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>

namespace murmur::testing {

class ForkedChild {
 public:
  // Throws std::system_error if the pair or the fork fails.
  explicit ForkedChild(const std::function<int(int fd)>& body);
  ~ForkedChild();
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;

  pid_t pid() const { return pid_; }
  // The parent's end of the socket pair.
  int fd() const { return fd_; }
  // Blocks until the child exits; its waitpid status (-1 if already reaped).
  int wait();

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
};

// A port over one end of a ForkedChild's pair: false, nullopt when the
// other side closed or wrote something else.
bool send_port(int fd, std::uint16_t port);
std::optional<std::uint16_t> receive_port(int fd);

}  // namespace murmur::testing
