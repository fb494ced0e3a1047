// StateWriter / StateReader: the small binary layout of an algorithm's or a
// scheduler's saved state (Algorithm::save_state, ScheduleController::
// save_state), which a checkpoint stores as an opaque section.
//
// Layout (little-endian):
//   "MURMURST" | u32 layout version | u32 name bytes | name | u64 elements |
//   u32 kind version | fields...
// `name` says whose state it is ("choco", "schedule"), `elements` how many
// parameters it is about (0: none), the kind version how that owner lays
// out its fields. Fields are u64, f64, and arrays (u64 count, then f32 or
// f64 values). Readers check the header against what they expect and every
// length against the bytes left, and throw std::invalid_argument naming the
// owner and the field: the bytes come from a file.
// Threads: an instance belongs to one thread; nothing blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace murmur::gossip {

class StateWriter {
 public:
  StateWriter(std::string_view name, std::uint64_t elements, std::uint32_t kind_version);
  void u64(std::uint64_t v);
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v);
  void floats(std::span<const float> values);
  void doubles(std::span<const double> values);
  void bytes(std::string_view value);  // u64 length, then the bytes (a nested blob)
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

// The header alone, for callers that check a blob before handing it on
// (the Peer compares `elements` with its tensors). Throws as StateReader.
struct StateHeader {
  std::string name;
  std::uint64_t elements = 0;
  std::uint32_t kind_version = 0;
};
StateHeader read_state_header(std::string_view blob);

class StateReader {
 public:
  // Checks the magic, the layout version, that the name is `expected_name`
  // and the kind version is `kind_version`.
  StateReader(std::string_view blob, std::string_view expected_name, std::uint32_t kind_version);
  std::uint64_t elements() const { return elements_; }
  // `field` names the value in the error when the blob ends before it.
  std::uint64_t u64(const char* field);
  std::int64_t i64(const char* field) { return static_cast<std::int64_t>(u64(field)); }
  double f64(const char* field);
  std::vector<float> floats(const char* field);
  std::vector<double> doubles(const char* field);
  std::string bytes(const char* field);
  // Throws when bytes are left over (a blob of another layout).
  void finish() const;

 private:
  const char* take(std::size_t bytes, const char* field);
  std::string_view blob_;
  std::string name_;
  std::size_t at_ = 0;
  std::uint64_t elements_ = 0;
};

}  // namespace murmur::gossip
