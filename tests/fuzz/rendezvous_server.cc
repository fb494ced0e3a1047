// Harness: the rendezvous server's handling of one connection's bytes
// (framing, decoding, Hello, every request), through a real Server on
// loopback, a fresh one per input (token "fuzz").
// Input: the byte stream a client sends: 4-byte length prefixes and Cap'n
// Proto bodies (wire.h). The harness sends it, half-closes, and reads what
// the server answers until the server closes the connection, which it must
// do within the time-out (a closed connection is never kept), and the server
// must then shut down cleanly.
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <chrono>

#include "fabric/rendezvous/server.h"
#include "fuzz_target.h"

namespace net = boost::asio;
namespace rdv = murmur::fabric::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::quiet_logs();
  rdv::ServerOptions options;
  options.bind_host = "127.0.0.1";
  options.token = "fuzz";
  options.max_message_bytes = 1 << 16;
  rdv::Server server(options);

  net::io_context io;
  net::ip::tcp::socket socket(io);
  socket.connect({net::ip::address_v4::loopback(), server.port()});
  // Blocking writes and reads with a time-out: a server that neither reads
  // nor closes fails the input instead of hanging the fuzzer.
  const timeval timeout{5, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  boost::system::error_code ec;
  net::write(socket, net::buffer(data, size), ec);  // the server may close early: not an error
  socket.shutdown(net::ip::tcp::socket::shutdown_send, ec);
  char answer[4096];
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    socket.read_some(net::buffer(answer), ec);
    if (ec == net::error::eof || ec == net::error::connection_reset) break;
    if (ec == net::error::would_block || ec == net::error::try_again || ec == net::error::timed_out ||
        std::chrono::steady_clock::now() - start > std::chrono::seconds(5))
      murmur::fuzz::fail("the server kept a connection whose client had finished");
    if (ec) break;
  }
  return 0;
}
