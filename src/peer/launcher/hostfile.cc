#include "peer/launcher/hostfile.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace murmur::launcher {

namespace {

constexpr int kMaxSlots = 65536;

std::string describe(const std::string& source, int line, const std::string& reason, const std::string& text) {
  if (line <= 0) return source + ": " + reason;
  return source + ":" + std::to_string(line) + ": " + reason + ": '" + text + "'";
}

std::string trim(const std::string& s) {
  const char* space = " \t\r\n\f\v";
  auto first = s.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Returns the reason the count is bad, or nullopt (and sets `out`).
std::optional<std::string> parse_count(const std::string& text, int& out) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 1 || value > kMaxSlots) {
    return "bad slots count '" + text + "' (expected a whole number from 1 to " + std::to_string(kMaxSlots) + ")";
  }
  out = value;
  return std::nullopt;
}

// Letters, digits, '.', '-', '_' and '@' (ssh's user@host).
std::optional<std::string> check_host(const std::string& host) {
  if (host.empty()) return std::string("missing host name");
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-' || c == '_' || c == '@';
    if (!ok) return "bad host name '" + host + "'";
  }
  return std::nullopt;
}

// "host" or "host:N". Returns the reason it is malformed, or nullopt.
std::optional<std::string> parse_host_word(const std::string& word, HostSlots& out) {
  auto colon = word.rfind(':');
  out.host = word.substr(0, colon);
  if (auto bad = check_host(out.host)) return bad;
  if (colon == std::string::npos) return std::nullopt;
  return parse_count(word.substr(colon + 1), out.slots);
}

// One hostfile line without its comment, trimmed and non-empty.
std::optional<std::string> parse_line(const std::string& content, HostSlots& out) {
  auto words = split_words(content);
  if (words[0].find('=') != std::string::npos) return "missing host name before '" + words[0] + "'";
  if (auto bad = parse_host_word(words[0], out)) return bad;
  bool horovod = words[0].find(':') != std::string::npos;
  bool have_slots = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const auto& w = words[i];
    auto eq = w.find('=');
    if (horovod || eq == std::string::npos) {
      return "unexpected '" + w + "' after the host (expected slots=N" +
             std::string(horovod ? " or host:N, not both" : "") + ")";
    }
    auto key = w.substr(0, eq), value = w.substr(eq + 1);
    if (key == "slots") {
      if (have_slots) return std::string("slots given twice");
      have_slots = true;
      if (auto bad = parse_count(value, out.slots)) return bad;
    } else if (key == "max_slots" || key == "max-slots") {
      int ignored = 0;  // Open MPI's oversubscription cap: murmur-run never oversubscribes
      if (auto bad = parse_count(value, ignored)) return "bad max_slots: " + *bad;
    } else {
      return "unknown key '" + key + "' (expected slots or max_slots)";
    }
  }
  return std::nullopt;
}

}  // namespace

HostfileError::HostfileError(const std::string& source, int line, const std::string& reason,
                             const std::string& text)
    : std::runtime_error(describe(source, line, reason, text)), line_(line) {}

std::vector<HostSlots> parse_hostfile(std::istream& in, const std::string& source) {
  std::vector<HostSlots> hosts;
  int number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    auto content = trim(raw.substr(0, raw.find('#')));
    if (content.empty()) continue;
    HostSlots entry;
    entry.line = number;
    if (auto bad = parse_line(content, entry)) throw HostfileError(source, number, *bad, trim(raw));
    hosts.push_back(entry);
  }
  if (in.bad()) throw HostfileError(source, 0, "read error", "");
  return hosts;
}

std::vector<HostSlots> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw HostfileError(path, 0, std::string("cannot read hostfile: ") + std::strerror(errno), "");
  auto hosts = parse_hostfile(in, path);
  if (hosts.empty()) throw HostfileError(path, 0, "hostfile names no hosts", "");
  return hosts;
}

std::vector<HostSlots> parse_host_list(const std::string& list) {
  std::vector<HostSlots> hosts;
  int item = 0;
  std::size_t start = 0;
  for (;;) {
    auto comma = list.find(',', start);
    auto raw = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    ++item;
    auto word = trim(raw);
    HostSlots entry;
    entry.line = item;
    std::optional<std::string> bad;
    if (word.empty()) bad = "empty host";
    else if (word.find_first_of(" \t") != std::string::npos) bad = "unexpected space (expected host or host:N)";
    else bad = parse_host_word(word, entry);
    if (bad) throw HostfileError("-H", item, *bad, raw);
    hosts.push_back(entry);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return hosts;
}

}  // namespace murmur::launcher
