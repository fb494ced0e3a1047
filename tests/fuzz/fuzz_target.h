// The one entry point every harness in tests/fuzz defines, libFuzzer's:
//
//   extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
//
// In the clang build (scripts/fuzz.sh, -DMURMUR_FUZZ=ON) libFuzzer's own
// main drives it; in the normal build replay_main.cc calls it with every
// file of the harness's corpus (ctest fuzz_replay_<name>), so the inputs
// fuzzing found are checked by CI without clang.
//
// A harness returns 0 for any input. It catches only the errors its decoder
// documents for bad input (a clear message, no crash); anything else (a
// logic_error, bad_alloc, a sanitizer report, a failed MURMUR_CHECK) escapes
// and is a finding. FuzzInput splits the bytes into the parameters a
// harness needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "common/log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace murmur::fuzz {

// Takes parameters from the front of the input; what is left is the
// message under test. Reading past the end yields zeros.
class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  template <typename T>
  T take() {
    T v{};
    const std::size_t n = sizeof(T) < size_ ? sizeof(T) : size_;
    // An empty input may come as a null pointer (the replay's empty file),
    // which memcpy must never be given, even for 0 bytes.
    if (n == 0) return v;
    std::memcpy(&v, data_, n);
    data_ += n;
    size_ -= n;
    return v;
  }
  std::span<const std::byte> rest() const { return {reinterpret_cast<const std::byte*>(data_), size_}; }
  std::string rest_string() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

// A harness's own check failed: prints and aborts, so that libFuzzer keeps
// the input and the replay test fails.
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz harness check failed: %s\n", what);
  std::abort();
}

// Silences murmur's loggers (once): a harness's inputs are mostly faults
// that the code under test logs, and the logs would drown libFuzzer's.
inline void quiet_logs() {
  static const bool done = [] {
    for (const char* name : {"fabric", "rendezvous", "gossip", "sched", "peer"})
      murmur::logger(name)->set_level(spdlog::level::off);
    return true;
  }();
  (void)done;
}

}  // namespace murmur::fuzz
