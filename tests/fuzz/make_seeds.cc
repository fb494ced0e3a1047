// Writes the binary harnesses' seed inputs into a corpus folder (argument:
// tests/fuzz/corpus): real messages made by murmur's own encoders (the
// compressors, the asio frame and handshake, the rendezvous protocol,
// receipts, join states, checkpoints), with the parameter bytes each
// harness expects in front. Not a test: run it by hand when a format
// changes (docs/testing.md, "Fuzzing"), and commit what it writes.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compress_specs.h"
#include "fabric/asio/wire.h"
#include "fabric/rendezvous/wire.h"
#include "gossip/algorithm/receipt.h"
#include "gossip/compress/compressor.h"
#include "peer/train/checkpoint.h"
#include "peer/train/join_state.h"

namespace fs = std::filesystem;
namespace rdv = murmur::fabric::rendezvous::wire;
namespace awire = murmur::fabric::asio::wire;

namespace {

fs::path root;

using Bytes = std::vector<unsigned char>;

template <typename T>
void put(Bytes& b, T v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  b.insert(b.end(), p, p + sizeof(T));
}
template <typename Range>
void append(Bytes& b, const Range& r) {
  const auto* p = reinterpret_cast<const unsigned char*>(r.data());
  b.insert(b.end(), p, p + r.size() * sizeof(*r.data()));
}

void write(const std::string& harness, const std::string& name, const Bytes& bytes) {
  fs::create_directories(root / harness);
  std::ofstream(root / harness / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<float> ramp(std::size_t n) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * (1 + i % 7);
  return x;
}

void compressors() {
  using namespace murmur::gossip;
  for (std::size_t i = 0; i < murmur::fuzz::kCompressorSpecs.size(); ++i) {
    const auto spec = murmur::fuzz::kCompressorSpecs[i];
    std::string file(spec);
    for (char& c : file)
      if (c == ':') c = '-';
    for (std::size_t n : {std::size_t{0}, std::size_t{7}, std::size_t{256}}) {
      const auto x = ramp(n);
      auto c = make_compressor(spec, Feedback::kNone);
      std::vector<std::byte> msg(c->max_encoded_bytes(n, {.seed = 42}));
      msg.resize(c->encode(x, msg, {.seed = 42}));
      Bytes decode{static_cast<unsigned char>(i)};
      put<std::uint16_t>(decode, static_cast<std::uint16_t>(n));
      append(decode, msg);
      write("compress_decode", file + "-" + std::to_string(n), decode);
      Bytes trip{static_cast<unsigned char>(i)};
      put<std::uint64_t>(trip, 42);
      append(trip, x);
      write("compress_roundtrip", file + "-" + std::to_string(n), trip);
    }
  }
}

void asio() {
  const std::string payload = "a chunk of a gossip message";
  const awire::FrameHeader h{.tag = 7,
                             .total = payload.size(),
                             .offset = 0,
                             .chunk = payload.size(),
                             .payload_hash = awire::checksum_payload(payload.data(), payload.size())};
  Bytes header{0};
  append(header, awire::encode_frame(h));
  write("asio_header", "frame", header);
  Bytes handshake{0};
  append(handshake, awire::encode_handshake({.rank = 1, .size = 4, .target = 0}));
  write("asio_header", "handshake", handshake);

  // Streams: one message in one frame (expected, tag 1 has a receive), one
  // unexpected in two frames, and an empty message.
  Bytes stream{0, 0x2};
  auto frame = [&](std::uint64_t tag, const std::string& whole, std::size_t offset, std::size_t chunk) {
    const std::string part = whole.substr(offset, chunk);
    append(stream, awire::encode_frame({.tag = tag,
                                        .total = whole.size(),
                                        .offset = offset,
                                        .chunk = part.size(),
                                        .payload_hash = awire::checksum_payload(part.data(), part.size())}));
    append(stream, part);
  };
  frame(1, payload, 0, payload.size());
  frame(5, payload, 0, 10);
  frame(5, payload, 10, payload.size() - 10);
  frame(9, "", 0, 0);
  write("asio_link", "three-messages", stream);

  // The same message in frames without payload checksums, as a link within
  // the host sends them (mode 0: the loopback link accepts them).
  Bytes unchecked{0, 0x2};
  for (const auto& [offset, chunk] : {std::pair<std::size_t, std::size_t>{0, 10}, {10, payload.size() - 10}}) {
    append(unchecked,
           awire::encode_frame(
               {.tag = 1, .total = payload.size(), .offset = offset, .chunk = chunk, .payload_checked = false}));
    append(unchecked, payload.substr(offset, chunk));
  }
  write("asio_link", "unchecked-frames", unchecked);
  unchecked[0] = 0x2;  // mode bit 1: the link checks payloads, so it refuses them
  write("asio_link", "unchecked-frames-on-a-checking-link", unchecked);
}

rdv::Hello hello() {
  rdv::Hello h;
  h.token = "fuzz";
  h.rank = 0;
  h.size = 1;
  h.host = "node0";
  h.signature = "algorithm=dpsgd;params=100";
  return h;
}

std::vector<rdv::ClientMessage> client_messages() {
  using rdv::Op;
  std::vector<rdv::ClientMessage> m;
  m.push_back(hello());
  m.push_back(rdv::Request{.id = 1, .op = Op::set, .key = "addr/0", .value = "tcp://127.0.0.1:1"});
  m.push_back(rdv::Request{.id = 2, .op = Op::get, .key = "addr/0"});
  m.push_back(rdv::Request{.id = 3, .op = Op::wait, .key = "addr/0", .timeout_ms = 1000});
  m.push_back(rdv::Request{.id = 4, .op = Op::barrier, .key = "start", .timeout_ms = 1000});
  m.push_back(rdv::Request{.id = 5, .op = Op::members});
  m.push_back(rdv::Request{.id = 6, .op = Op::gather, .key = "eval/", .timeout_ms = 1000, .count = 1});
  m.push_back(
      rdv::Request{.id = 10, .op = Op::gather, .key = "eval/1/", .timeout_ms = 1000, .count = 1, .retire = "eval/0/"});
  m.push_back(rdv::Request{.id = 7, .op = Op::suspect, .key = "timed out", .rank = 0});
  m.push_back(rdv::Request{.id = rdv::kHeartbeatEchoId, .op = Op::heartbeat});
  m.push_back(rdv::Request{.id = 8, .op = Op::admit});
  m.push_back(rdv::Request{.id = 9, .op = Op::leave});
  return m;
}

std::vector<rdv::ServerMessage> server_messages() {
  using Kind = rdv::Response::Kind;
  std::vector<rdv::ServerMessage> m;
  m.push_back(rdv::Welcome{.ok = true, .rank = 0, .size = 4});
  m.push_back(rdv::Welcome{.ok = false, .refused = "bad token"});
  m.push_back(rdv::Response{.id = 1, .kind = Kind::value, .text = "tcp://127.0.0.1:1"});
  m.push_back(rdv::Response{.id = 2, .kind = Kind::members, .members = {{0, "node0"}, {1, "node1"}}});
  m.push_back(rdv::Response{.id = 3, .kind = Kind::values, .values = {"1,2,3", "4,5,6"}});
  m.push_back(
      rdv::Response{.id = 4, .kind = Kind::verdict, .verdict = murmur::fabric::rendezvous::SuspectVerdict::kAlive});
  m.push_back(murmur::fabric::rendezvous::MemberLost{1, "node1", "no heartbeat", false});
  rdv::ViewChanged v;
  v.view.generation = 3;
  v.view.members = {{0, "node0"}, {2, "node2"}};
  v.view.joined = {2};
  v.lost = {{1, "node1", "connection closed", false}};
  m.push_back(v);
  m.push_back(rdv::JoinRefused{"node9", "signature differs"});
  return m;
}

void rendezvous() {
  int i = 0;
  Bytes session;  // every client message in one stream, for the server harness
  for (const auto& message : client_messages()) {
    const auto frame = rdv::encode(message);
    Bytes decode{0};
    decode.insert(decode.end(), reinterpret_cast<const unsigned char*>(frame.data()) + rdv::kPrefixBytes,
                  reinterpret_cast<const unsigned char*>(frame.data()) + frame.size());
    write("rendezvous_decode", "client-" + std::to_string(i++), decode);
    append(session, frame);
  }
  write("rendezvous_server", "session", session);
  const auto first = rdv::encode(rdv::ClientMessage(hello()));
  write("rendezvous_server", "hello",
        Bytes(reinterpret_cast<const unsigned char*>(first.data()),
              reinterpret_cast<const unsigned char*>(first.data()) + first.size()));
  i = 0;
  for (const auto& message : server_messages()) {
    const auto frame = rdv::encode(message);
    Bytes decode{1};
    decode.insert(decode.end(), reinterpret_cast<const unsigned char*>(frame.data()) + rdv::kPrefixBytes,
                  reinterpret_cast<const unsigned char*>(frame.data()) + frame.size());
    write("rendezvous_decode", "server-" + std::to_string(i++), decode);
  }
}

void receipts_and_joins() {
  Bytes receipt;
  put<std::uint64_t>(receipt, 0x1234);
  append(receipt, murmur::gossip::detail::encode_receipt(0x1234, 0.0125));
  write("receipt", "receipt", receipt);

  murmur::peer::train::JoinState state{.step = 120,
                                       .epoch = 2,
                                       .step_in_epoch = 20,
                                       .steps_per_epoch = 50,
                                       .schedule_steps_per_epoch = 50,
                                       .partition_generation = 3,
                                       .momentum = ramp(16)};
  Bytes join;
  put<std::uint16_t>(join, 16);
  put<std::uint8_t>(join, 5);
  append(join, murmur::peer::train::encode_join_state(state));
  write("join_state", "with-momentum", join);

  write("scalar_list", "three", Bytes{3, '1', '2', ',', '0', '.', '5', ',', '-', '1', 'e', '-', '3'});
}

void checkpoints() {
  murmur::peer::train::Checkpoint c;
  c.rank = 1;
  c.world_size = 4;
  c.model = "mlp";
  c.epoch = 2;
  c.step = 100;
  c.parameters = ramp(12);
  c.momentum = ramp(12);
  c.algorithm = "dpsgd";
  c.algorithm_state = "";
  c.data_pass = 2;
  c.data_position = 17;
  c.view_generation = 1;
  c.view_members = {0, 1, 3};
  const fs::path path = fs::temp_directory_path() / "murmur-make-seeds.ckpt";
  murmur::peer::train::save_checkpoint(path.string(), c);
  std::ifstream in(path, std::ios::binary);
  Bytes file{0};
  file.insert(file.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  fs::remove(path);
  write("checkpoint", "v2", file);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  root = argv[1];
  compressors();
  asio();
  rendezvous();
  receipts_and_joins();
  checkpoints();
  return 0;
}
