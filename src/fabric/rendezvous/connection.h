// One framed TCP connection of the rendezvous protocol (wire.h for the frame
// layout), shared by the server's sessions and the client.
//
// Threads: everything here runs on the owning io_context's single thread.
// send() queues a whole frame and never blocks; frames go out in order.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace murmur::fabric::rendezvous {

// The peer sent something that is not a well-formed frame.
class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Connection final : public std::enable_shared_from_this<Connection> {
 public:
  explicit Connection(boost::asio::ip::tcp::socket socket);

  // "ip:port" of the other end, fixed at construction.
  const std::string& remote() const { return remote_; }
  // The IP address this end of the connection has, fixed at construction:
  // the interface through which this host reaches the other end ("" when
  // unknown).
  const std::string& local_address() const { return local_address_; }
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  bool is_open() const { return socket_.is_open(); }

  // Reads one frame body as words. Returns nullopt when the peer closed the
  // connection cleanly between frames. Throws FrameError for a length prefix
  // over max_bytes (checked before anything is allocated), an empty or
  // truncated frame, or a length that is not a whole number of words; throws
  // boost::system::system_error for other socket failures.
  boost::asio::awaitable<std::optional<std::vector<std::uint64_t>>> read_frame(std::size_t max_bytes);

  // Queues a frame (prefix included). Dropped silently once closed.
  void send(std::vector<std::byte> frame);
  // Closes once every queued frame has been written (at once if none is).
  void close_after_flush();
  // Closes now; pending reads and writes complete with operation_aborted.
  void close();

 private:
  void write_next();

  boost::asio::ip::tcp::socket socket_;
  std::string remote_;
  std::string local_address_;
  std::deque<std::vector<std::byte>> queue_;
  bool writing_ = false;
  bool close_when_flushed_ = false;
};

}  // namespace murmur::fabric::rendezvous
