// Gathered sends (Transport::isendv) on every backend that runs here: a
// message made of pieces arrives as the bytes of the pieces back to back,
// whatever the layout (pieces across chunk boundaries, more pieces in one
// chunk than the provider takes iovecs, empty pieces, an empty message),
// in order with plain sends on the same tag; also through the link shaper,
// which holds the pieces until a message's time on the wire is up. And
// SendPieces itself.
#include "fabric/send_pieces.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "fabric/asio/wire.h"
#include "fabric/libfabric/endpoint.h"
#include "fabric/shaper/shaped_transport.h"
#include "fabric/shaper/shaper_config.h"
#include "fabric/transport.h"
#include "fabric/transport_options.h"

namespace murmur::fabric {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 60s;
constexpr std::size_t kChunk = 64 << 10;

std::vector<std::byte> pattern(std::size_t bytes, std::uint32_t seed) {
  std::vector<std::byte> data(bytes);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : data) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return data;
}

// The pieces of a message of the given piece sizes, and their concatenation.
struct Layout {
  std::vector<std::vector<std::byte>> storage;
  std::vector<SendPiece> pieces;
  std::vector<std::byte> whole;
};

Layout layout(const std::vector<std::size_t>& sizes, std::uint32_t seed) {
  Layout l;
  l.storage.reserve(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    l.storage.push_back(pattern(sizes[i], seed * 31 + static_cast<std::uint32_t>(i)));
    l.pieces.push_back(SendPiece(l.storage.back()));
    l.whole.insert(l.whole.end(), l.storage.back().begin(), l.storage.back().end());
  }
  return l;
}

// The layouts every backend is run with, each named for what it exercises.
struct NamedLayout {
  const char* what;
  std::vector<std::size_t> sizes;
};

std::vector<NamedLayout> layouts() {
  return {
      {"one piece", {1000}},
      {"no pieces", {}},
      {"only empty pieces", {0, 0}},
      // A compressed message: an 8-byte header, an index, values over 2.5 chunks.
      {"header, index, values across chunks", {8, 3000, 5 * kChunk / 2}},
      {"empty pieces between", {0, 100, 0, 0, 200, 0}},
      // 12 pieces in the first chunk: past every provider's iov limit (4).
      {"more pieces in a chunk than iovecs", {7, 1, 13, 100, 5, 9, 3, 2, 1, 40, 8, 8, kChunk}},
      {"a piece ends on a chunk boundary", {kChunk, kChunk, 1}},
      {"many chunks of two pieces", {3 * kChunk + 5, 4 * kChunk - 5}},
      // Chunk 0: 4 pieces (the iov limit); chunk 1: 18 (a copy on a later chunk).
      {"a later chunk of more pieces than iovecs",
       {kChunk - 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5000}},
      // A small message of more pieces than asio's caller writes (15).
      {"twenty small pieces", {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}},
  };
}

struct Backend {
  std::string backend;
  std::string provider;
  bool shaped = false;  // wrapped in the link shaper, which queues the pieces
};

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  return (info.param.shaped ? "shaped_" : "") + info.param.backend +
         (info.param.provider.empty() ? "" : "_" + info.param.provider);
}

class GatheredSend : public ::testing::TestWithParam<Backend> {
 protected:
  std::vector<std::unique_ptr<Transport>> make_group(int size) {
    std::vector<std::unique_ptr<Transport>> group;
    std::vector<PeerInfo> peers;
    for (int r = 0; r < size; ++r) {
      TransportOptions options;
      options.backend = GetParam().backend;
      if (!GetParam().provider.empty()) options.provider = GetParam().provider;
      options.rank = r;
      options.size = size;
      options.peers_on_this_host = true;
      options.chunk_bytes = kChunk;
      options.connect_timeout = 20s;
      group.push_back(make_transport(options));
      if (GetParam().shaped) {
        group.back() = shaper::make_shaped_transport(std::move(group.back()),
                                                     shaper::shaper_config_from_flag("lat=200us,bw=10gbit"),
                                                     static_cast<std::uint64_t>(r) + 1);
      }
      peers.push_back(PeerInfo{r, "host-" + std::to_string(r), group.back()->address()});
    }
    std::vector<std::future<void>> connects;
    for (auto& t : group) connects.push_back(std::async(std::launch::async, [&t, &peers] { t->connect(peers); }));
    for (auto& c : connects) c.get();
    return group;
  }
};

TEST_P(GatheredSend, EveryLayoutArrivesAsItsPiecesBackToBack) {
  auto group = make_group(2);
  std::uint32_t seed = 1;
  for (const auto& [what, sizes] : layouts()) {
    SCOPED_TRACE(what);
    // Posted before the send and after it: the posted and the unexpected path.
    for (const bool receive_first : {true, false}) {
      const Layout message = layout(sizes, seed++);
      std::vector<std::byte> received(message.whole.size() + 1, std::byte{0xEE});
      RequestPtr recv;
      if (receive_first) recv = group[1]->irecv(0, 5, received.data(), received.size());
      auto send = group[0]->isendv(1, 5, message.pieces);
      if (!receive_first) recv = group[1]->irecv(0, 5, received.data(), received.size());
      ASSERT_TRUE(send->wait_for(kWait));
      ASSERT_TRUE(recv->wait_for(kWait));
      ASSERT_FALSE(send->error());
      ASSERT_FALSE(recv->error());
      EXPECT_EQ(send->bytes(), message.whole.size());
      ASSERT_EQ(recv->bytes(), message.whole.size());
      EXPECT_EQ(received.back(), std::byte{0xEE}) << "the receive wrote past the message";
      received.pop_back();
      EXPECT_TRUE(received == message.whole) << "payload differs";
    }
  }
}

TEST_P(GatheredSend, GatheredAndPlainSendsKeepTheirOrderOnATag) {
  auto group = make_group(2);
  constexpr int kMessages = 24;
  std::vector<Layout> messages;
  for (int i = 0; i < kMessages; ++i) {
    // Every third a plain send; the others of 2, 3, 5 or 6 pieces, up to 3 chunks.
    std::vector<std::size_t> sizes;
    const int pieces = i % 3 == 0 ? 1 : 1 + i % 6;
    for (int p = 0; p < pieces; ++p) sizes.push_back(static_cast<std::size_t>((i * 7919 + p * 104729) % (kChunk / 2)));
    messages.push_back(layout(sizes, 100 + static_cast<std::uint32_t>(i)));
  }
  std::vector<std::vector<std::byte>> received(kMessages, std::vector<std::byte>(3 * kChunk));
  std::vector<RequestPtr> sends;
  std::vector<RequestPtr> recvs;
  for (int i = 0; i < kMessages; ++i) recvs.push_back(group[1]->irecv(0, 9, received[i].data(), received[i].size()));
  for (int i = 0; i < kMessages; ++i) {
    const Layout& m = messages[i];
    sends.push_back(i % 3 == 0 ? group[0]->isend(1, 9, m.whole.data(), m.whole.size())
                               : group[0]->isendv(1, 9, m.pieces));
  }
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_TRUE(sends[i]->wait_for(kWait));
    ASSERT_TRUE(recvs[i]->wait_for(kWait));
    ASSERT_FALSE(recvs[i]->error()) << "message " << i;
    ASSERT_EQ(recvs[i]->bytes(), messages[i].whole.size()) << "message " << i;
    EXPECT_TRUE(std::equal(messages[i].whole.begin(), messages[i].whole.end(), received[i].begin()))
        << "message " << i << " differs";
  }
}

TEST_P(GatheredSend, AGatheredSendToItselfArrives) {
  auto group = make_group(2);
  const Layout message = layout({8, 3000, 2 * kChunk + 11}, 42);
  std::vector<std::byte> received(message.whole.size());
  auto recv = group[0]->irecv(0, 6, received.data(), received.size());
  auto send = group[0]->isendv(0, 6, message.pieces);
  ASSERT_TRUE(send->wait_for(kWait));
  ASSERT_TRUE(recv->wait_for(kWait));
  ASSERT_FALSE(recv->error());
  ASSERT_EQ(recv->bytes(), message.whole.size());
  EXPECT_TRUE(received == message.whole) << "payload differs";
}

INSTANTIATE_TEST_SUITE_P(Backends, GatheredSend,
                         ::testing::Values(Backend{"libfabric", "tcp"}, Backend{"libfabric", "shm"},
                                           Backend{"asio", ""}, Backend{"libfabric", "tcp", true}),
                         backend_name);

// The layouts above reach fi_tsendmsg's several iovecs only where the
// provider takes several per send; with a limit of 1 every chunk of
// several pieces would go as a copy and the exchanges would still pass.
TEST(GatheredSendLibfabric, TcpAndShmTakeFourIovecsPerSend) {
  for (const char* provider : {"tcp", "shm"}) {
    TransportOptions options;
    options.peers_on_this_host = true;
    const libfabric::Endpoint endpoint(options, provider);
    EXPECT_GE(endpoint.tx_iov_limit, 4u) << provider;
  }
}

TEST(SendPieces, DropsEmptyPiecesAndCountsWhatIsLeft) {
  const Layout l = layout({0, 5, 0, 7, 0}, 3);
  const SendPieces pieces(l.pieces);
  EXPECT_EQ(pieces.bytes(), 12u);
  EXPECT_EQ(pieces.count(), 2u);
  ASSERT_EQ(pieces.pieces().size(), 2u);
  EXPECT_EQ(pieces.pieces()[0].data(), l.storage[1].data());
  EXPECT_EQ(pieces.pieces()[1].data(), l.storage[3].data());
  EXPECT_EQ(SendPieces().count(), 0u);
  EXPECT_EQ(SendPieces(nullptr, 0).pieces().size(), 0u);
  EXPECT_EQ(SendPieces(l.storage[1].data(), 5).count(), 1u);
}

TEST(SendPieces, RangesVisitAndCopyThePiecesThatHoldThem) {
  const Layout l = layout({3, 4, 5}, 4);
  const SendPieces pieces(l.pieces);
  EXPECT_EQ(pieces.count_in(0, 12), 3u);
  EXPECT_EQ(pieces.count_in(0, 3), 1u);
  EXPECT_EQ(pieces.count_in(2, 2), 2u);
  EXPECT_EQ(pieces.count_in(3, 4), 1u);
  EXPECT_EQ(pieces.count_in(6, 2), 2u);
  EXPECT_EQ(pieces.count_in(5, 0), 0u);
  for (std::size_t offset = 0; offset <= 12; ++offset) {
    for (std::size_t length = 0; offset + length <= 12; ++length) {
      std::vector<std::byte> copy(length);
      pieces.copy_to(offset, length, copy.data());
      EXPECT_TRUE(std::equal(copy.begin(), copy.end(), l.whole.begin() + static_cast<std::ptrdiff_t>(offset)))
          << "offset " << offset << " length " << length;
      std::size_t visited = 0;
      std::size_t calls = 0;
      std::size_t last_piece = 0;
      pieces.visit(offset, length, [&](std::size_t piece, const std::byte*, std::size_t bytes) {
        if (calls > 0) {
          EXPECT_EQ(piece, last_piece + 1);
        }
        last_piece = piece;
        visited += bytes;
        ++calls;
      });
      EXPECT_EQ(visited, length);
      EXPECT_EQ(calls, pieces.count_in(offset, length));
    }
  }
}

// The asio frame's checksum over a chunk of pieces is the checksum of the
// same bytes in one buffer, so a receiver cannot tell the two apart.
TEST(SendPieces, AsioChecksumOverPiecesIsTheChecksumOfTheirBytes) {
  const Layout l = layout({8, 3000, 100000, 1, 17}, 5);
  const SendPieces pieces(l.pieces);
  for (const auto& [offset, length] : std::vector<std::pair<std::size_t, std::size_t>>{
           {0, l.whole.size()}, {0, 8}, {5, 10}, {3008, 100000}, {100, 50000}, {103000, 26}}) {
    EXPECT_EQ(asio::wire::checksum_payload(pieces, offset, length),
              asio::wire::checksum_payload(l.whole.data() + offset, length))
        << "offset " << offset << " length " << length;
  }
}

}  // namespace
}  // namespace murmur::fabric
