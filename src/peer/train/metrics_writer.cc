#include "peer/train/metrics_writer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace murmur::peer::train {

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  if (path.empty()) return;
  std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    throw std::runtime_error("--metrics " + path + ": cannot create: " + std::strerror(errno));
  }
}

MetricsWriter::~MetricsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsWriter::write(const nlohmann::json& record) {
  if (file_ == nullptr) return;
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    throw std::runtime_error("--metrics " + path_ + ": write failed: " + std::strerror(errno));
  }
}

std::string expand_rank(std::string pattern, int rank) {
  const std::string key = "{rank}", value = std::to_string(rank);
  for (auto at = pattern.find(key); at != std::string::npos; at = pattern.find(key, at + value.size())) {
    pattern.replace(at, key.size(), value);
  }
  return pattern;
}

}  // namespace murmur::peer::train
