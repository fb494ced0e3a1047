#include "fabric/rendezvous/connection.h"

#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>

#include "common/close_on_exec.h"
#include "fabric/rendezvous/wire.h"

namespace murmur::fabric::rendezvous {
namespace asio = boost::asio;

namespace {
std::string describe(const asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}
std::string local_ip(const asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const auto endpoint = socket.local_endpoint(ec);
  return ec ? std::string() : endpoint.address().to_string();
}
}  // namespace

Connection::Connection(asio::ip::tcp::socket socket)
    : socket_(std::move(socket)), remote_(describe(socket_)), local_address_(local_ip(socket_)) {
  // Every connection of the server and the client passes here.
  set_close_on_exec(socket_.native_handle());
}

asio::awaitable<std::optional<std::vector<std::uint64_t>>> Connection::read_frame(std::size_t max_bytes) {
  std::array<unsigned char, wire::kPrefixBytes> prefix{};
  boost::system::error_code ec;
  std::size_t got =
      co_await asio::async_read(socket_, asio::buffer(prefix), asio::redirect_error(asio::use_awaitable, ec));
  if (ec == asio::error::eof) {
    if (got == 0) co_return std::nullopt;
    throw FrameError("truncated length prefix: got " + std::to_string(got) + " of 4 bytes");
  }
  if (ec) throw boost::system::system_error(ec);

  const std::uint32_t length = std::uint32_t(prefix[0]) | std::uint32_t(prefix[1]) << 8 |
                               std::uint32_t(prefix[2]) << 16 | std::uint32_t(prefix[3]) << 24;
  // Checked before allocating: a hostile 4 GiB prefix costs nothing.
  if (length > max_bytes) {
    throw FrameError("length prefix " + std::to_string(length) + " exceeds the limit of " + std::to_string(max_bytes) +
                     " bytes");
  }
  if (length == 0) throw FrameError("empty message (length prefix 0)");

  std::vector<std::uint64_t> words((length + 7) / 8);
  got = co_await asio::async_read(socket_, asio::buffer(words.data(), length),
                                  asio::redirect_error(asio::use_awaitable, ec));
  if (ec == asio::error::eof) {
    throw FrameError("truncated message: got " + std::to_string(got) + " of " + std::to_string(length) +
                     " bytes before the connection closed");
  }
  if (ec) throw boost::system::system_error(ec);
  if (length % 8 != 0) {
    throw FrameError("length " + std::to_string(length) + " is not a whole number of 8-byte words");
  }
  co_return words;
}

void Connection::send(std::vector<std::byte> frame) {
  if (!socket_.is_open() || close_when_flushed_) return;
  queue_.push_back(std::move(frame));
  if (!writing_) write_next();
}

void Connection::close_after_flush() {
  close_when_flushed_ = true;
  if (!writing_) close();
}

void Connection::close() {
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  // A write in flight still points into queue_.front(); its handler clears.
  if (!writing_) queue_.clear();
}

void Connection::write_next() {
  if (queue_.empty() || !socket_.is_open()) {
    writing_ = false;
    if (close_when_flushed_) close();
    return;
  }
  writing_ = true;
  asio::async_write(socket_, asio::buffer(queue_.front()),
                    [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                      if (ec) {
                        // The reader sees the failure too and reports it once.
                        self->writing_ = false;
                        self->close();
                        self->queue_.clear();
                        return;
                      }
                      if (!self->queue_.empty()) self->queue_.pop_front();
                      self->write_next();
                    });
}

}  // namespace murmur::fabric::rendezvous
