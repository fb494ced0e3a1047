#include "common/line_reader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include <fmt/format.h>

namespace murmur {
namespace {

std::string describe(const std::string& path, int line, const std::string& reason) {
  if (path.empty()) return reason;
  if (line <= 0) return fmt::format("{}: {}", path, reason);
  return fmt::format("{}:{}: {}", path, line, reason);
}

}  // namespace

ParseError::ParseError(std::string path, int line, std::string reason)
    : std::runtime_error(describe(path, line, reason)),
      path_(std::move(path)),
      line_(line),
      reason_(std::move(reason)) {}

LineReader::LineReader(std::string text, std::string path, LineFormat format)
    : text_(std::move(text)), path_(std::move(path)), format_(format) {}

LineReader LineReader::from_stream(std::istream& in, std::string path, LineFormat format) {
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  LineReader reader(std::move(text), std::move(path), format);
  if (in.bad()) reader.fail(0, "read error");
  return reader;
}

LineReader LineReader::from_file(const std::string& path, std::string_view cannot, LineFormat format) {
  LineReader reader("", path, format);
  // An ifstream opens a directory and then reads nothing; say what it is.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) reader.fail(0, fmt::format("{}: is a directory", cannot));
  std::ifstream in(path, std::ios::binary);
  if (!in) reader.fail(0, fmt::format("{}: {}", cannot, std::strerror(errno)));
  reader.text_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) reader.fail(0, fmt::format("{}: {}", cannot, std::strerror(errno)));
  return reader;
}

bool LineReader::next(Line& line) {
  while (offset_ < text_.size()) {
    const std::size_t newline = text_.find('\n', offset_);
    const std::size_t end = newline == std::string::npos ? text_.size() : newline;
    const std::string_view raw = std::string_view(text_).substr(offset_, end - offset_);
    offset_ = end + 1;
    ++number_;
    const std::string_view content = trim(strip_comment(raw, format_.comment));
    if (content.empty()) continue;
    line = Line{number_, raw, content};
    return true;
  }
  return false;
}

void LineReader::fail(int line, const std::string& reason) const {
  format_.raise(path_, line, reason);
  throw ParseError(path_, line, reason);  // a RaiseFn that returned: still an error
}

long long LineReader::whole_number(int line, std::string_view word, std::string_view what, long long min,
                                   long long max) const {
  long long value = 0;
  if (!parse_number(word, value) || value < min || value > max) {
    fail(line, fmt::format("{} '{}' is not a whole number from {} to {}", what, word, min, max));
  }
  return value;
}

}  // namespace murmur
