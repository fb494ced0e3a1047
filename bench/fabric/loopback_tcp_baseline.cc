#include "loopback_tcp_baseline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace murmur::bench {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const char* call) {
  throw std::runtime_error(std::string("loopback baseline: ") + call + ": " + std::strerror(errno));
}

// Owns one file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

void set_nodelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) fail("setsockopt(TCP_NODELAY)");
}

// A connected pair of loopback TCP sockets: {accepted, dialed}.
std::pair<Fd, Fd> connected_pair() {
  Fd listener(::socket(AF_INET, SOCK_STREAM, 0));
  if (listener.get() < 0) fail("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
  if (::listen(listener.get(), 1) != 0) fail("listen");
  socklen_t len = sizeof addr;
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) fail("getsockname");
  Fd dialed(::socket(AF_INET, SOCK_STREAM, 0));
  if (dialed.get() < 0) fail("socket");
  if (::connect(dialed.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("connect");
  Fd accepted(::accept(listener.get(), nullptr, nullptr));
  if (accepted.get() < 0) fail("accept");
  set_nodelay(accepted.get());
  set_nodelay(dialed.get());
  return {std::move(accepted), std::move(dialed)};
}

void write_all(int fd, const unsigned char* data, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("send");
    }
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void read_all(int fd, unsigned char* data, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, data, bytes, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("recv");
    }
    if (n == 0) throw std::runtime_error("loopback baseline: recv: connection closed early");
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

// The most a marked read waits for: the mark is a hint the kernel may not
// honour (a receive window closed by its memory accounting while less than
// the mark is queued), so a wait that outlives it reads what is there.
constexpr int kMarkWaitMs = 10;
constexpr std::size_t kMarkMaxBytes = std::size_t{1} << 20;

std::atomic<long> marked_waits_timed_out{0};

void set_receive_low_water(int fd, int& current, std::size_t bytes) {
  const int value = static_cast<int>(bytes);
  if (value == current) return;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &value, sizeof value) != 0) fail("setsockopt(SO_RCVLOWAT)");
  current = value;
}

// read_all, waking once per MiB: the low-water mark is what this message
// still owes (at most a MiB), so the wait never asks for bytes that will
// not come, and poll() rather than a blocking recv() does the waiting,
// since tcp_poll() reports a socket readable below the mark once the
// receive window is nearly shut or receive memory is under pressure, where
// a blocking recv() sleeps on (most likely the stall of
// docs/fabric-performance.md, 5 December). Back to a mark of 1 at the end.
void read_all_marked(int fd, unsigned char* data, std::size_t bytes) {
  int mark = 1;
  while (bytes > 0) {
    set_receive_low_water(fd, mark, std::min(bytes, kMarkMaxBytes));
    pollfd readable{fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, kMarkWaitMs);
    if (ready < 0) {
      if (errno == EINTR) continue;
      fail("poll");
    }
    if (ready == 0) marked_waits_timed_out.fetch_add(1, std::memory_order_relaxed);
    const ssize_t n = ::recv(fd, data, bytes, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      fail("recv");
    }
    if (n == 0) throw std::runtime_error("loopback baseline: recv: connection closed early");
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
  set_receive_low_water(fd, mark, 1);
}

}  // namespace

const char* socket_reader_name(SocketReader reader) { return reader == SocketReader::kMarked ? "marked" : "blocking"; }

long socket_reader_timed_out_waits() { return marked_waits_timed_out.load(std::memory_order_relaxed); }

double loopback_tcp_bandwidth_mbps(std::size_t message_bytes, std::size_t total_bytes, SocketReader reader_kind) {
  if (message_bytes == 0) throw std::invalid_argument("loopback baseline: message_bytes must be positive");
  const std::size_t messages = std::max<std::size_t>(1, total_bytes / message_bytes);
  auto [reader, writer] = connected_pair();
  // A pattern of period 251 (prime, not a power of two): a byte that lands
  // at another offset of the message shows in the check after the clock.
  std::vector<unsigned char> out(message_bytes), in(message_bytes);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(i % 251);
  const auto read_message = reader_kind == SocketReader::kMarked ? read_all_marked : read_all;
  std::exception_ptr writer_error;
  const auto start = Clock::now();
  std::thread sender([&, fd = writer.get()] {
    try {
      for (std::size_t i = 0; i < messages; ++i) write_all(fd, out.data(), out.size());
    } catch (...) {
      writer_error = std::current_exception();
    }
  });
  std::exception_ptr reader_error;
  try {
    for (std::size_t i = 0; i < messages; ++i) read_message(reader.get(), in.data(), in.size());
  } catch (...) {
    reader_error = std::current_exception();
    ::shutdown(reader.get(), SHUT_RDWR);  // unblock the sender
  }
  const auto stop = Clock::now();
  sender.join();
  if (writer_error) std::rethrow_exception(writer_error);
  if (reader_error) std::rethrow_exception(reader_error);
  if (in != out) throw std::runtime_error("loopback baseline: wrong bytes received");
  const double seconds = std::chrono::duration<double>(stop - start).count();
  return static_cast<double>(messages * message_bytes) / seconds / 1e6;
}

double loopback_tcp_rtt_us(std::size_t message_bytes, int iterations) {
  if (iterations < 1) throw std::invalid_argument("loopback baseline: iterations must be positive");
  constexpr int kWarmup = 10;
  const std::size_t bytes = std::max<std::size_t>(message_bytes, 1);
  auto [server, client] = connected_pair();
  std::exception_ptr echo_error;
  std::thread echo([&, fd = server.get()] {
    std::vector<unsigned char> buf(bytes);
    try {
      for (int i = 0; i < kWarmup + iterations; ++i) {
        read_all(fd, buf.data(), bytes);
        write_all(fd, buf.data(), bytes);
      }
    } catch (...) {
      echo_error = std::current_exception();
    }
  });
  std::vector<unsigned char> buf(bytes, 0x33);
  std::vector<double> rtts;
  rtts.reserve(iterations);
  std::exception_ptr error;
  try {
    for (int i = 0; i < kWarmup + iterations; ++i) {
      const auto start = Clock::now();
      write_all(client.get(), buf.data(), bytes);
      read_all(client.get(), buf.data(), bytes);
      if (i >= kWarmup) rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
  } catch (...) {
    error = std::current_exception();
    ::shutdown(client.get(), SHUT_RDWR);
  }
  echo.join();
  if (error) std::rethrow_exception(error);
  if (echo_error) std::rethrow_exception(echo_error);
  std::nth_element(rtts.begin(), rtts.begin() + rtts.size() / 2, rtts.end());
  return rtts[rtts.size() / 2];
}

}  // namespace murmur::bench
