#include "peer/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace murmur::peer::train {

namespace {

constexpr char kMagic[8] = {'M', 'U', 'R', 'M', 'U', 'R', 'C', 'K'};
constexpr std::uint32_t kVersion = 2;
constexpr std::uint32_t kOldestVersion = 1;
// A header is a few hundred bytes; anything far larger is not ours.
constexpr std::uint32_t kMaxHeaderBytes = 1 << 16;

void append(std::string& out, const void* data, std::size_t bytes) {
  out.append(static_cast<const char*>(data), bytes);
}

void append_u32(std::string& out, std::uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                              static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 24)};
  append(out, b, 4);
}

std::uint32_t read_u32(const std::string& in, std::size_t offset) {
  const auto* b = reinterpret_cast<const unsigned char*>(in.data() + offset);
  return b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
}

void append_u64(std::string& out, std::uint64_t v) {
  append_u32(out, static_cast<std::uint32_t>(v));
  append_u32(out, static_cast<std::uint32_t>(v >> 32));
}

std::uint64_t read_u64(const std::string& in, std::size_t offset) {
  return read_u32(in, offset) | (static_cast<std::uint64_t>(read_u32(in, offset + 4)) << 32);
}

std::uint32_t crc32_of(const std::string& bytes, std::size_t length) {
  // crc32_z: a size_t length (crc32 takes a uInt and would wrap past 4 GiB).
  return static_cast<std::uint32_t>(::crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data()), length));
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw CheckpointError("checkpoint " + path + ": " + what);
}

void write_all(int fd, const std::string& bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, std::string("write failed: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) / ("rank-" + std::to_string(rank) + ".ckpt")).string();
}

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  if (!c.momentum.empty() && c.momentum.size() != c.parameters.size()) {
    fail(path, "momentum has " + std::to_string(c.momentum.size()) + " values for " +
                   std::to_string(c.parameters.size()) + " parameters");
  }
  static_assert(std::endian::native == std::endian::little, "checkpoints are written little-endian");
  const nlohmann::json header = {{"rank", c.rank},
                                 {"world_size", c.world_size},
                                 {"model", c.model},
                                 {"parameters", c.parameters.size()},
                                 {"epoch", c.epoch},
                                 {"step", c.step},
                                 {"momentum", !c.momentum.empty()},
                                 {"algorithm", c.algorithm},
                                 {"data_pass", c.data_pass},
                                 {"data_position", c.data_position},
                                 {"view_generation", c.view_generation},
                                 {"view_members", c.view_members}};
  const std::string header_text = header.dump();
  std::string bytes;
  bytes.reserve(64 + header_text.size() + 8 * c.parameters.size());
  append(bytes, kMagic, sizeof(kMagic));
  append_u32(bytes, kVersion);
  append_u32(bytes, static_cast<std::uint32_t>(header_text.size()));
  bytes += header_text;
  append(bytes, c.parameters.data(), c.parameters.size() * sizeof(float));
  append(bytes, c.momentum.data(), c.momentum.size() * sizeof(float));
  for (const std::string* blob : {&c.algorithm_state, &c.schedule_state}) {
    append_u64(bytes, blob->size());
    bytes += *blob;
  }
  append_u32(bytes, crc32_of(bytes, bytes.size()));

  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) fail(path, "cannot create its directory: " + ec.message());
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot create " + temporary + ": " + std::strerror(errno));
  try {
    write_all(fd, bytes, temporary);
    if (::fsync(fd) != 0) fail(temporary, std::string("fsync failed: ") + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    fail(path, "cannot rename " + temporary + " over it: " + reason);
  }
  // The rename itself is durable only once the directory is synced.
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t fixed = sizeof(kMagic) + 8;
  if (bytes.size() < fixed + 4) fail(path, "truncated (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) fail(path, "not a murmur checkpoint (bad magic)");
  const std::uint32_t version = read_u32(bytes, sizeof(kMagic));
  if (version < kOldestVersion || version > kVersion)
    fail(path, "version " + std::to_string(version) + ", this build reads " + std::to_string(kOldestVersion) + " to " +
                   std::to_string(kVersion));
  const std::uint32_t stored_crc = read_u32(bytes, bytes.size() - 4);
  if (crc32_of(bytes, bytes.size() - 4) != stored_crc) fail(path, "checksum mismatch (corrupt or truncated)");
  const std::uint32_t header_bytes = read_u32(bytes, sizeof(kMagic) + 4);
  if (header_bytes > kMaxHeaderBytes || fixed + header_bytes + 4 > bytes.size()) {
    fail(path, "header length " + std::to_string(header_bytes) + " does not fit the file");
  }
  Checkpoint c;
  std::size_t count = 0;
  bool has_momentum = false;
  try {
    const auto header = nlohmann::json::parse(bytes.substr(fixed, header_bytes));
    c.rank = header.at("rank").get<int>();
    c.world_size = header.at("world_size").get<int>();
    c.model = header.at("model").get<std::string>();
    c.epoch = header.at("epoch").get<int>();
    c.step = header.at("step").get<std::int64_t>();
    count = header.at("parameters").get<std::size_t>();
    has_momentum = header.at("momentum").get<bool>();
    if (version >= 2) {
      c.algorithm = header.at("algorithm").get<std::string>();
      c.data_pass = header.at("data_pass").get<int>();
      c.data_position = header.at("data_position").get<std::uint64_t>();
      c.view_generation = header.at("view_generation").get<std::uint64_t>();
      c.view_members = header.at("view_members").get<std::vector<int>>();
    }
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("bad header: ") + e.what());
  }
  c.version = static_cast<int>(version);
  const std::size_t payload = bytes.size() - 4 - fixed - header_bytes;
  const std::size_t vectors = has_momentum ? 2 : 1;
  // Version 2: the two state sections, each at least its u64 length.
  const std::size_t sections = version >= 2 ? 16 : 0;
  if (count > payload / sizeof(float) / vectors || vectors * count * sizeof(float) + sections > payload ||
      (version < 2 && payload != vectors * count * sizeof(float))) {
    fail(path, "header says " + std::to_string(count) + " parameters" + (has_momentum ? " and momentum" : "") +
                   " but the file holds " + std::to_string(payload) + " payload bytes");
  }
  const std::size_t data = fixed + header_bytes;
  c.parameters.resize(count);
  std::memcpy(c.parameters.data(), bytes.data() + data, count * sizeof(float));
  if (has_momentum) {
    c.momentum.resize(count);
    std::memcpy(c.momentum.data(), bytes.data() + data + count * sizeof(float), count * sizeof(float));
  }
  std::size_t at = data + vectors * count * sizeof(float);
  const std::size_t end = bytes.size() - 4;
  for (auto [blob, what] : {std::pair{&c.algorithm_state, "algorithm state"}, {&c.schedule_state, "scheduler state"}}) {
    if (version < 2) break;
    if (end - at < 8)
      fail(path, std::string("truncated before the ") + what + " section at byte " + std::to_string(at));
    const std::uint64_t size = read_u64(bytes, at);
    at += 8;
    if (size > end - at)
      fail(path, std::string("the ") + what + " section claims " + std::to_string(size) + " bytes at byte " +
                     std::to_string(at) + ", " + std::to_string(end - at) + " are left");
    blob->assign(bytes, at, size);
    at += size;
  }
  if (at != end) fail(path, std::to_string(end - at) + " bytes after the last section");
  return c;
}

}  // namespace murmur::peer::train
