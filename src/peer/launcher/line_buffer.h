// LineBuffer: splits the bytes read from one pipe into lines.
//
// A line longer than max_line bytes is cut there (so a peer that never
// prints a newline cannot make the launcher hold unbounded memory).
// Not thread-safe; one per pipe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace murmur::peer::launcher {

class LineBuffer {
 public:
  explicit LineBuffer(std::size_t max_line = 1 << 20) : max_line_(max_line) {}

  void append(std::string_view bytes) { pending_.append(bytes); }
  // The next complete line without its '\n' (a trailing '\r' is kept), or
  // nullopt when none is complete yet.
  std::optional<std::string> next_line();
  // What is left after the writer closed the pipe: a last line without a
  // newline, or nullopt. Call once next_line() has returned nullopt.
  std::optional<std::string> take_rest();

 private:
  std::size_t max_line_;
  std::string pending_;
  std::size_t start_ = 0;  // consumed prefix of pending_, erased lazily
};

}  // namespace murmur::peer::launcher
