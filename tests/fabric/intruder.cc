// A process that is not in the job but knows its ports: what the
// authentication tests (auth_test.cc) point at a job's rendezvous and data
// plane. Each mode prints what happened and exits 0 when the job kept it out:
//   asio HOST PORT RANK TARGET TOKEN   dials an asio transport as rank RANK
//       of the job to TARGET, with TOKEN ("-": none) as its job token; if
//       answered, proves TOKEN and sends a data frame (tag 7). Exit 0 when
//       the transport closes the connection, 1 if it keeps it open.
//   rendezvous HOST PORT CLUSTER_TOKEN  says Hello as rank 0 of 2, and
//       answers the server's Challenge with a proof made with
//       $MURMUR_JOB_TOKEN (unset: none), on a raw connection (the real
//       Client would give up on a server that cannot prove our token, before
//       the server refuses us). Exit 0 when refused, 1 when admitted.
//   idle HOST PORT N                    opens N connections, says nothing
//       on them, prints "holding N connections" and waits to be killed.
//   libfabric HEX_ADDRESS               opens a libfabric tcp endpoint of
//       its own, inserts the job member's address (hex of its
//       Transport::address()) and sends it a message of tag 7. Exit 0 once
//       the send is done without an error (whether the member believes it is
//       for the test to say).
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "common/job_token.h"
#include "fabric/asio/auth.h"
#include "fabric/asio/wire.h"
#include "fabric/rendezvous/hello_proof.h"
#include "fabric/rendezvous/wire.h"
#include "fabric/transport_options.h"

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
namespace wire = murmur::fabric::asio::wire;
namespace auth = murmur::fabric::asio::auth;

tcp::socket dial(net::io_context& io, const std::string& host, const std::string& port) {
  tcp::socket socket(io);
  net::connect(socket, tcp::resolver(io).resolve(host, port));
  // A transport that neither answers nor closes must not hang the test.
  const timeval timeout{20, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return socket;
}

// Reads until the other end closes: 0 if it did, 1 if it kept the
// connection open (the read timed out).
int until_closed(tcp::socket& socket) {
  char buffer[256];
  boost::system::error_code ec;
  for (;;) {
    socket.read_some(net::buffer(buffer), ec);
    if (ec == net::error::eof || ec == net::error::connection_reset) {
      std::printf("closed by the transport\n");
      return 0;
    }
    if (ec) {
      std::printf("connection kept open (%s)\n", ec.message().c_str());
      return 1;
    }
  }
}

int asio_mode(const std::string& host, const std::string& port, int rank, int target, const std::string& token) {
  net::io_context io;
  auto socket = dial(io, host, port);
  const bool proves = token != "-";
  std::vector<unsigned char> hello(wire::kHandshakeBytes + (proves ? auth::kNonceBytes : 0));
  const auto hs = wire::encode_handshake({.rank = rank, .size = 2, .target = target, .proves_token = proves});
  std::memcpy(hello.data(), hs.data(), hs.size());
  boost::system::error_code ec;
  net::write(socket, net::buffer(hello), ec);
  std::vector<unsigned char> reply(wire::kHandshakeBytes + (proves ? auth::kNonceBytes + auth::kProofBytes : 0));
  net::read(socket, net::buffer(reply), ec);
  if (ec) {
    std::printf("no handshake reply (%s)\n", ec.message().c_str());
    return until_closed(socket);
  }
  std::printf("got a handshake reply\n");
  if (proves) {
    murmur::job_token::Nonce their_nonce;
    std::memcpy(their_nonce.data(), reply.data() + wire::kHandshakeBytes, auth::kNonceBytes);
    const auto proof = auth::prove(token, auth::Side::kDialer, their_nonce, rank, target);
    net::write(socket, net::buffer(proof), ec);
  }
  // A message the job's receive for tag 7 would take, were it believed.
  const std::string payload = "intruder's bytes";
  wire::FrameHeader frame;
  frame.tag = 7;
  frame.total = frame.chunk = payload.size();
  frame.payload_hash = wire::checksum_payload(payload.data(), payload.size());
  const auto header = wire::encode_frame(frame);
  net::write(socket, net::buffer(header), ec);
  net::write(socket, net::buffer(payload), ec);
  return until_closed(socket);
}

namespace rdv = murmur::fabric::rendezvous;

rdv::wire::ServerMessage read_message(tcp::socket& socket) {
  std::array<unsigned char, 4> prefix{};
  net::read(socket, net::buffer(prefix));
  const std::uint32_t length = prefix[0] | prefix[1] << 8 | prefix[2] << 16 | std::uint32_t(prefix[3]) << 24;
  if (length == 0 || length > (1u << 20) || length % 8 != 0) throw std::runtime_error("bad frame from the server");
  std::vector<std::uint64_t> words(length / 8);
  net::read(socket, net::buffer(words.data(), length));
  return rdv::wire::decode_server(words, 1 << 20);
}

int rendezvous_mode(const std::string& host, const std::string& port, const std::string& cluster_token) {
  net::io_context io;
  auto socket = dial(io, host, port);
  rdv::wire::Hello hello;
  hello.token = cluster_token;
  hello.rank = 0;
  hello.size = 2;
  hello.host = "intruder";
  net::write(socket, net::buffer(rdv::wire::encode(hello)));
  auto answer = read_message(socket);
  if (const auto* challenge = std::get_if<rdv::wire::Challenge>(&answer)) {
    const std::string token = murmur::job_token::from_environment();
    if (!token.empty()) hello.proof = rdv::hello_proof(rdv::Prover::kClient, token, challenge->nonce);
    net::write(socket, net::buffer(rdv::wire::encode(hello)));
    answer = read_message(socket);
  }
  const auto* welcome = std::get_if<rdv::wire::Welcome>(&answer);
  if (welcome == nullptr) {
    std::printf("unexpected answer\n");
    return 1;
  }
  if (welcome->ok) {
    std::printf("admitted\n");
    return 1;
  }
  std::printf("refused: %s\n", welcome->refused.c_str());
  return 0;
}

int libfabric_mode(const std::string& hex_address) {
  std::string address;
  for (std::size_t i = 0; i + 1 < hex_address.size(); i += 2) {
    address.push_back(static_cast<char>(std::stoi(hex_address.substr(i, 2), nullptr, 16)));
  }
  murmur::fabric::TransportOptions options;
  options.backend = "libfabric";
  options.provider = "tcp";
  options.peers_on_this_host = true;
  options.rank = 0;  // claims to be rank 0 of the job, from its own address
  options.size = 2;
  auto transport = murmur::fabric::make_transport(options);
  transport->connect({{0, "intruder", transport->address()}, {1, "member", address}});
  const std::string payload = "intruder's bytes";
  auto send = transport->isend(1, 7, payload.data(), payload.size());
  if (!send->wait_for(std::chrono::seconds(30))) {
    std::printf("send not done in 30 s\n");
    return 1;
  }
  if (send->error()) {
    std::printf("send failed\n");
    return 1;
  }
  std::printf("sent\n");
  return 0;
}

int idle_mode(const std::string& host, const std::string& port, int n) {
  net::io_context io;
  std::vector<tcp::socket> sockets;
  for (int i = 0; i < n; ++i) sockets.push_back(dial(io, host, port));
  std::printf("holding %d connections\n", n);
  std::fflush(stdout);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 6 && args[0] == "asio") {
      return asio_mode(args[1], args[2], std::stoi(args[3]), std::stoi(args[4]), args[5]);
    }
    if (args.size() == 4 && args[0] == "rendezvous") return rendezvous_mode(args[1], args[2], args[3]);
    if (args.size() == 4 && args[0] == "idle") return idle_mode(args[1], args[2], std::stoi(args[3]));
    if (args.size() == 2 && args[0] == "libfabric") return libfabric_mode(args[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "intruder: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "usage: intruder asio|rendezvous|idle ... (see intruder.cc)\n");
  return 2;
}
