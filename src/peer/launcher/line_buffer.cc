#include "peer/launcher/line_buffer.h"

namespace murmur::peer::launcher {

std::optional<std::string> LineBuffer::next_line() {
  auto newline = pending_.find('\n', start_);
  std::optional<std::string> line;
  if (newline != std::string::npos && newline - start_ <= max_line_) {
    line = pending_.substr(start_, newline - start_);
    start_ = newline + 1;
  } else if (pending_.size() - start_ >= max_line_) {
    line = pending_.substr(start_, max_line_);
    start_ += max_line_;
  }
  // Erase the consumed prefix once it is most of the buffer: amortised O(1)
  // per byte instead of a memmove per line.
  if (start_ > 0 && (!line || start_ * 2 >= pending_.size())) {
    pending_.erase(0, start_);
    start_ = 0;
  }
  return line;
}

std::optional<std::string> LineBuffer::take_rest() {
  std::optional<std::string> rest;
  if (start_ < pending_.size()) rest = pending_.substr(start_);
  pending_.clear();
  start_ = 0;
  return rest;
}

}  // namespace murmur::peer::launcher
