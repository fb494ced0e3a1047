#include "tests/support/scratch_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <system_error>

namespace murmur::testing {
namespace {

// Created on first use, removed by its destructor at exit.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / ("murmur-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;  // nothing to report to at exit
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

std::filesystem::path scratch_path(const std::string& name) {
  static const ScratchDir dir;  // thread-safe initialisation
  return dir.path() / name;
}

}  // namespace murmur::testing
