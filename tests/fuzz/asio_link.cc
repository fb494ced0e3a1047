// Harness: the asio backend's frame reader (fabric/asio/link.cc), fed the
// input as the byte stream a peer sends on its connection (loopback TCP).
// Input: u8 mode, u8 receives, then the stream.
//   mode bit 0: recompute every frame's header and payload checksums in
//     place (walking frame to frame), so that the fuzzer reaches the
//     reassembly logic behind them (a frame flagged kFramePayloadUnchecked
//     gets a payload hash of 0, as a sender writes it);
//   mode bit 1: the link checks payloads on this loopback connection too
//     (PayloadChecksum::kAlways), so it refuses unchecked frames;
//   receives: bit i (i < 4) posts a receive for tag i before the stream
//     arrives, of 64 << i bytes; the rest land as unexpected messages
//     (limit 64 KiB).
// The link must end failed (the stream ends with the connection) within the
// time-out, and every posted receive must be done.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "fabric/asio/link.h"
#include "fabric/asio/wire.h"
#include "fabric/request.h"
#include "fuzz_target.h"

namespace net = boost::asio;
using murmur::fabric::Request;
namespace wire = murmur::fabric::asio::wire;

namespace {

void fix_checksums(std::vector<unsigned char>& s) {
  std::size_t pos = 0;
  while (s.size() - pos >= wire::kFrameHeaderBytes) {
    unsigned char* h = &s[pos];
    std::uint64_t chunk;
    std::memcpy(&chunk, h + 32, 8);
    const std::size_t left = s.size() - pos - wire::kFrameHeaderBytes;
    std::uint16_t flags;
    std::memcpy(&flags, h + 6, 2);
    if (chunk <= left) {
      const std::uint64_t payload =
          (flags & wire::kFramePayloadUnchecked) ? 0 : wire::checksum_payload(h + wire::kFrameHeaderBytes, chunk);
      std::memcpy(h + 40, &payload, 8);
    }
    const std::uint64_t header = wire::hash64(h, 48);
    std::memcpy(h + 48, &header, 8);
    if (chunk > left) break;
    pos += wire::kFrameHeaderBytes + chunk;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  murmur::fuzz::quiet_logs();
  murmur::fuzz::FuzzInput input(data, size);
  const auto mode = input.take<std::uint8_t>();
  const auto receives = input.take<std::uint8_t>();
  const auto rest = input.rest();
  std::vector<unsigned char> stream(reinterpret_cast<const unsigned char*>(rest.data()),
                                    reinterpret_cast<const unsigned char*>(rest.data()) + rest.size());
  if (mode & 1) fix_checksums(stream);

  net::io_context io;
  net::ip::tcp::acceptor acceptor(io, {net::ip::address_v4::loopback(), 0});
  auto ours = std::make_unique<net::ip::tcp::socket>(io);
  net::ip::tcp::socket theirs(io);
  theirs.connect(acceptor.local_endpoint());
  acceptor.accept(*ours);

  std::vector<std::vector<unsigned char>> buffers;  // outlive the link
  std::vector<std::shared_ptr<Request>> requests;
  murmur::fabric::asio::Link link(1, 1 << 16, 1 << 16, false,
                                  (mode & 2) ? murmur::fabric::TransportOptions::PayloadChecksum::kAlways
                                             : murmur::fabric::TransportOptions::PayloadChecksum::kOffHost);
  link.attach(std::move(ours), /*peer_wants_payload_checksum=*/false);
  for (unsigned tag = 0; tag < 4; ++tag) {
    if (!(receives & (1u << tag))) continue;
    buffers.emplace_back(64u << tag);
    requests.push_back(std::make_shared<Request>(Request::Kind::kRecv, 1, tag));
    link.post_recv(requests.back(), buffers.back().data(), buffers.back().size());
  }
  net::async_write(theirs, net::buffer(stream), [&](const boost::system::error_code&, std::size_t) {
    boost::system::error_code ignored;
    theirs.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  });
  io.run_for(std::chrono::seconds(10));
  if (!link.failed()) murmur::fuzz::fail("the link did not end with its connection");
  for (const auto& r : requests)
    if (!r->test()) murmur::fuzz::fail("a posted receive is still pending after the link failed");
  return 0;
}
