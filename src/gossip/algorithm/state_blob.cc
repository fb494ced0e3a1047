#include "gossip/algorithm/state_blob.h"

#include <bit>
#include <cstring>
#include <stdexcept>

namespace murmur::gossip {

namespace {

static_assert(std::endian::native == std::endian::little, "state blobs are written little-endian");

constexpr char kMagic[8] = {'M', 'U', 'R', 'M', 'U', 'R', 'S', 'T'};
constexpr std::uint32_t kLayoutVersion = 1;
// Names are algorithm names and "schedule"; anything longer is not ours.
constexpr std::uint32_t kMaxNameBytes = 64;

void put(std::string& out, const void* data, std::size_t bytes) { out.append(static_cast<const char*>(data), bytes); }

[[noreturn]] void malformed(std::string_view owner, const std::string& what) {
  throw std::invalid_argument("saved state" + (owner.empty() ? std::string() : " of " + std::string(owner)) + ": " +
                              what);
}

struct Cursor {
  std::string_view blob;
  std::size_t at = 0;
  std::string_view owner;

  const char* take(std::size_t bytes, const char* field) {
    if (bytes > blob.size() - at)
      malformed(owner, std::string("truncated at ") + field + " (offset " + std::to_string(at) + ", needs " +
                           std::to_string(bytes) + " bytes, " + std::to_string(blob.size() - at) + " left)");
    const char* p = blob.data() + at;
    at += bytes;
    return p;
  }
  template <typename T>
  T get(const char* field) {
    T v;
    std::memcpy(&v, take(sizeof(T), field), sizeof(T));
    return v;
  }
};

// Reads the header; leaves the cursor after it.
StateHeader parse_header(Cursor& c) {
  if (c.blob.size() < sizeof(kMagic) || std::memcmp(c.blob.data(), kMagic, sizeof(kMagic)) != 0)
    malformed(c.owner, "not a murmur state blob (bad magic, " + std::to_string(c.blob.size()) + " bytes)");
  c.at = sizeof(kMagic);
  const auto layout = c.get<std::uint32_t>("layout version");
  if (layout != kLayoutVersion)
    malformed(c.owner,
              "layout version " + std::to_string(layout) + ", this build reads " + std::to_string(kLayoutVersion));
  const auto name_bytes = c.get<std::uint32_t>("name length");
  if (name_bytes > kMaxNameBytes) malformed(c.owner, "name length " + std::to_string(name_bytes) + " is not ours");
  StateHeader h;
  h.name.assign(c.take(name_bytes, "name"), name_bytes);
  h.elements = c.get<std::uint64_t>("element count");
  h.kind_version = c.get<std::uint32_t>("kind version");
  return h;
}

}  // namespace

StateWriter::StateWriter(std::string_view name, std::uint64_t elements, std::uint32_t kind_version) {
  put(bytes_, kMagic, sizeof(kMagic));
  const std::uint32_t name_bytes = static_cast<std::uint32_t>(name.size());
  put(bytes_, &kLayoutVersion, 4);
  put(bytes_, &name_bytes, 4);
  put(bytes_, name.data(), name.size());
  put(bytes_, &elements, 8);
  put(bytes_, &kind_version, 4);
}

void StateWriter::u64(std::uint64_t v) { put(bytes_, &v, 8); }
void StateWriter::f64(double v) { put(bytes_, &v, 8); }
void StateWriter::floats(std::span<const float> values) {
  u64(values.size());
  put(bytes_, values.data(), values.size_bytes());
}
void StateWriter::doubles(std::span<const double> values) {
  u64(values.size());
  put(bytes_, values.data(), values.size_bytes());
}

void StateWriter::bytes(std::string_view value) {
  u64(value.size());
  bytes_ += value;
}

StateHeader read_state_header(std::string_view blob) {
  Cursor c{blob, 0, {}};
  return parse_header(c);
}

StateReader::StateReader(std::string_view blob, std::string_view expected_name, std::uint32_t kind_version)
    : blob_(blob), name_(expected_name) {
  Cursor c{blob, 0, expected_name};
  const StateHeader h = parse_header(c);
  if (h.name != expected_name) malformed(expected_name, "the blob holds the state of '" + h.name + "'");
  if (h.kind_version != kind_version)
    malformed(expected_name,
              "version " + std::to_string(h.kind_version) + ", this build reads " + std::to_string(kind_version));
  at_ = c.at;
  elements_ = h.elements;
}

const char* StateReader::take(std::size_t bytes, const char* field) {
  Cursor c{blob_, at_, name_};
  const char* p = c.take(bytes, field);
  at_ = c.at;
  return p;
}

std::uint64_t StateReader::u64(const char* field) {
  std::uint64_t v;
  std::memcpy(&v, take(8, field), 8);
  return v;
}

double StateReader::f64(const char* field) {
  double v;
  std::memcpy(&v, take(8, field), 8);
  return v;
}

std::vector<float> StateReader::floats(const char* field) {
  const std::uint64_t n = u64(field);
  if (n > (blob_.size() - at_) / sizeof(float))
    malformed(name_, std::string(field) + " claims " + std::to_string(n) + " values, " +
                         std::to_string(blob_.size() - at_) + " bytes left");
  const char* from = take(n * sizeof(float), field);
  std::vector<float> v(n);
  // An empty vector's data() may be null, which memcpy must not get (UBSan).
  if (n > 0) std::memcpy(v.data(), from, n * sizeof(float));
  return v;
}

std::vector<double> StateReader::doubles(const char* field) {
  const std::uint64_t n = u64(field);
  if (n > (blob_.size() - at_) / sizeof(double))
    malformed(name_, std::string(field) + " claims " + std::to_string(n) + " values, " +
                         std::to_string(blob_.size() - at_) + " bytes left");
  const char* from = take(n * sizeof(double), field);
  std::vector<double> v(n);
  // An empty vector's data() may be null, which memcpy must not get (UBSan).
  if (n > 0) std::memcpy(v.data(), from, n * sizeof(double));
  return v;
}

std::string StateReader::bytes(const char* field) {
  const std::uint64_t n = u64(field);
  if (n > blob_.size() - at_)
    malformed(name_, std::string(field) + " claims " + std::to_string(n) + " bytes, " +
                         std::to_string(blob_.size() - at_) + " left");
  return std::string(take(n, field), n);
}

void StateReader::finish() const {
  if (at_ != blob_.size())
    malformed(name_, std::to_string(blob_.size() - at_) + " bytes left over after the last field (another layout?)");
}

}  // namespace murmur::gossip
