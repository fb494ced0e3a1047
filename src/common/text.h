// Small text helpers shared by the parsers of murmur's text formats and flags
// (common/line_reader.h reads files with them).
//
// Pure functions; thread-safe. Whitespace is what std::isspace says in the C
// locale (space, \t, \n, \v, \f, \r).
#pragma once

#include <charconv>
#include <cmath>
#include <concepts>
#include <string>
#include <string_view>
#include <vector>

namespace murmur {

// `s` without leading and trailing whitespace.
std::string_view trim(std::string_view s);

// `s` up to (not including) the first `comment` character.
std::string_view strip_comment(std::string_view s, char comment);

// The whitespace-separated words of `s`, in order; none for a blank `s`.
std::vector<std::string> split_words(std::string_view s);

// Parses all of `text` as a number of type T into `out`: "12", "-3", "0.25",
// "1e-3" (floating point only). False, with `out` unspecified, for an empty
// text, anything before or after the number (spaces included), a value out of
// T's range, and for floating point "inf" and "nan": no format here means them.
template <typename T>
requires std::integral<T> || std::floating_point<T>
bool parse_number(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, out);
  if (text.empty() || ec != std::errc() || stop != end) return false;
  if constexpr (std::floating_point<T>) return std::isfinite(out);
  return true;
}

}  // namespace murmur
