#include "peer/launcher/report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace murmur::peer::launcher {

namespace {

using nlohmann::json;

// A number from the result object, or nullopt when absent, null or not a number.
std::optional<double> number(const PeerRecord& p, const char* key) {
  if (!p.result) return std::nullopt;
  auto it = p.result->find(key);
  if (it == p.result->end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string cell(std::optional<double> x, const char* format, double scale = 1) {
  return x ? fmt::format(fmt::runtime(format), *x / scale) : "-";
}

double total(const std::vector<PeerRecord>& peers, const char* key) {
  double sum = 0;
  for (const auto& p : peers) sum += number(p, key).value_or(0);
  return sum;
}

std::uint64_t total_bytes(const std::vector<PeerRecord>& peers, const char* key) {
  std::uint64_t sum = 0;
  for (const auto& p : peers) {
    if (!p.result) continue;
    auto it = p.result->find(key);
    if (it != p.result->end() && it->is_number_unsigned())
      sum += it->get<std::uint64_t>();
    else if (it != p.result->end() && it->is_number() && it->get<double>() > 0)
      sum += static_cast<std::uint64_t>(it->get<double>());
  }
  return sum;
}

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error("cannot " + what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

std::optional<double> average_model_accuracy(const std::vector<PeerRecord>& peers) {
  for (const auto& p : peers) {
    if (auto a = number(p, "average_model_test_accuracy")) return a;
  }
  return std::nullopt;
}

std::string format_result_table(const std::vector<PeerRecord>& peers, double wall_seconds) {
  std::size_t host_width = 4;
  for (const auto& p : peers) host_width = std::max(host_width, p.host.size());
  std::string out = fmt::format("{:>4}  {:<{}}  {:>9}  {:>10}  {:>10}  {:>8}\n", "rank", "host", host_width, "test acc",
                                "MB sent", "MB recv", "wall s");
  for (const auto& p : peers) {
    out += fmt::format("{:>4}  {:<{}}  {:>9}  {:>10}  {:>10}  {:>8}\n", p.rank, p.host, host_width,
                       cell(number(p, "test_accuracy"), "{:.4f}"), cell(number(p, "bytes_sent"), "{:.2f}", 1e6),
                       cell(number(p, "bytes_received"), "{:.2f}", 1e6), cell(number(p, "wall_seconds"), "{:.2f}"));
  }
  auto average = average_model_accuracy(peers);
  out += "average model test accuracy: " + (average ? fmt::format("{:.4f}", *average) : std::string("-")) + "\n";
  out +=
      fmt::format("total: {:.2f} MB sent, {:.2f} MB received by {} peers; wall time {:.2f} s\n",
                  total(peers, "bytes_sent") / 1e6, total(peers, "bytes_received") / 1e6, peers.size(), wall_seconds);
  return out;
}

json make_summary(const std::vector<PeerRecord>& peers, double wall_seconds, const std::vector<std::string>& command) {
  json accuracies = json::array(), results = json::array();
  for (const auto& p : peers) {
    auto a = number(p, "test_accuracy");
    accuracies.push_back(a ? json(*a) : json(nullptr));
    results.push_back(p.result ? *p.result : json(nullptr));
  }
  auto average = average_model_accuracy(peers);
  return json{{"average_model_test_accuracy", average ? json(*average) : json(nullptr)},
              {"peer_test_accuracy", accuracies},
              {"wall_seconds", wall_seconds},
              {"bytes_sent", total_bytes(peers, "bytes_sent")},
              {"bytes_received", total_bytes(peers, "bytes_received")},
              {"peers", results},
              {"command", command},
              {"np", peers.size()}};
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error("create", temp);
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      auto error = io_error("write", temp);
      ::close(fd);
      ::unlink(temp.c_str());
      throw error;
    }
    done += static_cast<std::size_t>(n);
  }
  // fsync before rename: after a crash the name points at complete contents.
  const bool synced = ::fsync(fd) == 0;
  const int sync_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    if (!synced) errno = sync_errno;
    auto error = io_error("write", temp);
    ::unlink(temp.c_str());
    throw error;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    auto error = io_error("rename '" + temp + "' to", path);
    ::unlink(temp.c_str());
    throw error;
  }
}

}  // namespace murmur::peer::launcher
