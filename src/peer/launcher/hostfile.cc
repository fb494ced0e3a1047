#include "peer/launcher/hostfile.h"

#include <optional>

#include <fmt/format.h>

#include "common/line_reader.h"

namespace murmur::peer::launcher {

namespace {

constexpr int kMaxSlots = 65536;
constexpr LineFormat kHostfileFormat{.comment = '#', .raise = &raise_as<HostfileError>};

// Returns the reason the count is bad, or nullopt (and sets `out`).
std::optional<std::string> parse_count(const std::string& text, int& out) {
  int value = 0;
  if (!parse_number(text, value) || value < 1 || value > kMaxSlots) {
    return fmt::format("bad slots count '{}' (expected a whole number from 1 to {})", text, kMaxSlots);
  }
  out = value;
  return std::nullopt;
}

// Letters, digits, '.', '-', '_' and '@' (ssh's user@host).
std::optional<std::string> check_host(const std::string& host) {
  if (host.empty()) return std::string("missing host name");
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              c == '_' || c == '@';
    if (!ok) return fmt::format("bad host name '{}'", host);
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

// The words of one hostfile line without its comment (at least one).
std::optional<std::string> parse_line(const std::vector<std::string>& words, HostSlots& out) {
  if (words[0].find('=') != std::string::npos) return fmt::format("missing host name before '{}'", words[0]);
  if (auto bad = parse_host_word(words[0], out)) return bad;
  bool horovod = words[0].find(':') != std::string::npos;
  bool have_slots = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const auto& w = words[i];
    auto eq = w.find('=');
    if (horovod || eq == std::string::npos) {
      return fmt::format("unexpected '{}' after the host (expected slots=N{})", w,
                         horovod ? " or host:N, not both" : "");
    }
    auto key = w.substr(0, eq), value = w.substr(eq + 1);
    if (key == "slots") {
      if (have_slots) return std::string("slots given twice");
      have_slots = true;
      if (auto bad = parse_count(value, out.slots)) return bad;
    } else if (key == "max_slots" || key == "max-slots") {
      int ignored = 0;  // Open MPI's oversubscription cap: murmur-run never oversubscribes
      if (auto bad = parse_count(value, ignored)) return fmt::format("bad max_slots: {}", *bad);
    } else {
      return fmt::format("unknown key '{}' (expected slots or max_slots)", key);
    }
  }
  return std::nullopt;
}

std::vector<HostSlots> parse_lines(LineReader& reader) {
  std::vector<HostSlots> hosts;
  for (Line line; reader.next(line);) {
    HostSlots entry;
    entry.line = line.number;
    if (auto bad = parse_line(line.words(), entry)) {
      throw HostfileError(reader.path(), line.number, *bad, std::string(trim(line.raw)));
    }
    hosts.push_back(entry);
  }
  return hosts;
}

std::string describe(int line, const std::string& reason, const std::string& text) {
  return line > 0 ? fmt::format("{}: '{}'", reason, text) : reason;
}

}  // namespace

HostfileError::HostfileError(const std::string& source, int line, const std::string& reason, const std::string& text)
    : ParseError(source, line, describe(line, reason, text)) {}

std::vector<HostSlots> parse_hostfile(std::istream& in, const std::string& source) {
  LineReader reader = LineReader::from_stream(in, source, kHostfileFormat);
  return parse_lines(reader);
}

std::vector<HostSlots> read_hostfile(const std::string& path) {
  LineReader reader = LineReader::from_file(path, "cannot read hostfile", kHostfileFormat);
  auto hosts = parse_lines(reader);
  if (hosts.empty()) throw HostfileError(path, 0, "hostfile names no hosts");
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
    const std::string word(trim(raw));
    HostSlots entry;
    entry.line = item;
    std::optional<std::string> bad;
    if (word.empty())
      bad = "empty host";
    else if (word.find_first_of(" \t") != std::string::npos)
      bad = "unexpected space (expected host or host:N)";
    else
      bad = parse_host_word(word, entry);
    if (bad) throw HostfileError("-H", item, *bad, raw);
    hosts.push_back(entry);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return hosts;
}

}  // namespace murmur::peer::launcher
