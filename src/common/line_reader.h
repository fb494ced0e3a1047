// LineReader: the one reader of murmur's line-oriented text formats
// (hostfiles, topology files, shaper files, schedule files, simulator profile
// and cluster files), and ParseError, the one error type that says where in
// such an input something is wrong.
//
// Every format shares the same lexical rules: lines are numbered from 1, the
// comment character (normally '#') starts a comment that runs to the end of
// the line, surrounding whitespace is ignored, and a line that is blank after
// that carries nothing. The format's own grammar (keywords, key=value items,
// what may repeat) stays in its parser; docs/launcher.md, topology-format.md,
// link-profiles.md, scheduler.md and sim-files.md describe each one.
//
// Blocking: from_file and from_stream read the whole input when called;
// next() does no I/O. Thread safety: a LineReader is a plain value used by one
// thread at a time; ParseError is immutable.
#pragma once

#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"

namespace murmur {

// A fault of the world in a text input: a malformed file, flag or spec. Its
// message is "path:line: reason", or "path: reason" when line is 0 (the input
// as a whole: it cannot be read, it lacks something), or just "reason" when
// path is empty (an input that has no name, e.g. a generator's parameters).
// Formats whose callers catch their own type derive it from ParseError.
class ParseError : public std::runtime_error {
 public:
  ParseError(std::string path, int line, std::string reason);

  const std::string& path() const noexcept { return path_; }
  int line() const noexcept { return line_; }  // 1-based; 0: not one line
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string path_;
  int line_;
  std::string reason_;
};

// How a format's errors are thrown: raise_as<E> throws E(path, line, reason).
// It must throw.
using RaiseFn = void (*)(const std::string& path, int line, const std::string& reason);
template <typename E>
void raise_as(const std::string& path, int line, const std::string& reason) {
  throw E(path, line, reason);
}

struct LineFormat {
  char comment = '#';
  RaiseFn raise = &raise_as<ParseError>;  // for every error the reader itself reports
};

// One line that carries something. The views point into the LineReader that
// produced it and are valid while that reader lives (and is not moved).
struct Line {
  int number = 0;         // 1-based
  std::string_view raw;   // as written, without the line break
  std::string_view text;  // comment removed, trimmed; never empty
  std::vector<std::string> words() const { return split_words(text); }
};

class LineReader {
 public:
  // Reads `text`; `path` names it in errors ("-H", a file name, ...).
  LineReader(std::string text, std::string path, LineFormat format = {});
  // Reads all of `in`; a stream that goes bad is an error at line 0 ("read error").
  static LineReader from_stream(std::istream& in, std::string path, LineFormat format = {});
  // Reads the file at `path`. One that cannot be read (missing, a directory,
  // no permission) is an error at line 0: "PATH: CANNOT: reason", where
  // `cannot` is the format's phrase, e.g. "cannot read hostfile".
  static LineReader from_file(const std::string& path, std::string_view cannot, LineFormat format = {});

  // The next line that carries something, skipping blank and comment-only
  // lines; false at the end of the input.
  bool next(Line& line);

  // The number of lines passed so far, blank ones included: after the last
  // next(), the number of lines in the input.
  int lines_read() const { return number_; }
  const std::string& path() const { return path_; }

  // Throws the format's error for `line` (0: the whole input).
  [[noreturn]] void fail(int line, const std::string& reason) const;

  // `word` as a whole number from `min` to `max`; otherwise fails at `line`
  // with "WHAT 'WORD' is not a whole number from MIN to MAX".
  long long whole_number(int line, std::string_view word, std::string_view what, long long min, long long max) const;

 private:
  std::string text_;
  std::string path_;
  LineFormat format_;
  std::size_t offset_ = 0;  // start of the next line in text_
  int number_ = 0;
};

}  // namespace murmur
