// The trace file: Chrome's trace-event JSON object format, one event per
// line, so that a merge or a test can read it with any JSON parser and a
// person can grep it.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/trace_data.h"

namespace murmur::trace::detail {
namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Microseconds since the session's origin, to the nanosecond.
std::string micros(std::int64_t ns, std::int64_t origin_ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns - origin_ns) / 1000.0);
}

std::string args_json(const Args& a) {
  std::string out = "{";
  auto add = [&](const std::string& field) {
    if (out.size() > 1) out += ",";
    out += field;
  };
  if (a.peer >= 0) add(fmt::format("\"peer\":{}", a.peer));
  if (a.bytes >= 0) add(fmt::format("\"bytes\":{}", a.bytes));
  if (a.tag != 0) add(fmt::format("\"tag\":\"{:#x}\"", a.tag));
  if (!a.detail.empty()) add("\"detail\":" + json_string(a.detail));
  return out + "}";
}

class File {
 public:
  explicit File(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "w")) {
    if (file_ == nullptr) throw std::runtime_error("trace: cannot write " + path + ": " + std::strerror(errno));
  }
  ~File() {
    if (file_ != nullptr) std::fclose(file_);
  }
  void line(const std::string& text) {
    if (!first_) std::fputs(",\n", file_);
    first_ = false;
    std::fputs(text.c_str(), file_);
  }
  void raw(const std::string& text) { std::fputs(text.c_str(), file_); }
  void close() {
    const bool failed = std::ferror(file_) != 0;
    const bool close_failed = std::fclose(file_) != 0;
    file_ = nullptr;
    if (failed || close_failed) throw std::runtime_error("trace: writing " + path_ + " failed (disk full?)");
  }

 private:
  std::string path_;
  std::FILE* file_;
  bool first_ = true;
};

}  // namespace

void write_trace_file(const std::string& path, const TraceData& data) {
  File out(path);
  out.raw("{\"displayTimeUnit\":\"ms\",\n\"otherData\":{");
  out.raw(fmt::format(
      "\"murmur_trace\":1,\"rank\":{},\"host\":{},\"boot_id\":{},\"origin_steady_ns\":{},\"origin_unix_ns\":{},"
      "\"dropped_events\":{}",
      data.rank, json_string(data.host), json_string(data.boot_id), data.origin_steady_ns, data.origin_unix_ns,
      data.dropped_events));
  out.raw("},\n\"traceEvents\":[\n");
  const int pid = data.rank;
  out.line(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid,
                       json_string(data.label)));
  out.line(
      fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid, pid));
  std::uint64_t next_id = 1;
  for (const auto& thread : data.threads) {
    out.line(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, thread.tid,
                         json_string(thread.name)));
    for (const auto& e : thread.events) {
      const char* cat = category_name(e.category);
      const std::string ts = micros(e.start_ns, data.origin_steady_ns);
      const std::string args = args_json(e.args);
      switch (e.phase) {
        case Phase::kComplete:
          out.line(fmt::format(R"({{"ph":"X","cat":"{}","name":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{}}})",
                               cat, e.name, pid, thread.tid, ts, micros(e.end_ns, e.start_ns), args));
          break;
        case Phase::kInstant:
          out.line(fmt::format(R"({{"ph":"i","s":"t","cat":"{}","name":"{}","pid":{},"tid":{},"ts":{},"args":{}}})",
                               cat, e.name, pid, thread.tid, ts, args));
          break;
        case Phase::kMessage: {
          // One track per neighbour and direction: the name says which.
          const std::string name =
              fmt::format("{} {} {}", e.name, e.category == Category::kSend ? "to" : "from", e.args.peer);
          // Ids unique across the ranks of a merged trace.
          const std::uint64_t id = (static_cast<std::uint64_t>(pid) << 40) | next_id++;
          out.line(
              fmt::format(R"({{"ph":"b","cat":"{}","name":"{}","id":"{:#x}","pid":{},"tid":{},"ts":{},"args":{}}})",
                          cat, name, id, pid, thread.tid, ts, args));
          out.line(
              fmt::format(R"({{"ph":"e","cat":"{}","name":"{}","id":"{:#x}","pid":{},"tid":{},"ts":{},"args":{{}}}})",
                          cat, name, id, pid, thread.tid, micros(e.end_ns, data.origin_steady_ns)));
          break;
        }
      }
    }
  }
  out.raw("\n]}\n");
  out.close();
}

}  // namespace murmur::trace::detail
