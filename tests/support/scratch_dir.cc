#include "tests/support/scratch_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <system_error>

namespace murmur::testing {
namespace {

// Created on first use, removed by its destructor at exit, by the process
// that made it only: a forked child that exits through exit() runs the
// destructor too, and must not take its parent's files.
class ScratchDir {
 public:
  ScratchDir() : owner_(::getpid()) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / ("murmur-test-" + std::to_string(owner_));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    if (::getpid() != owner_) return;
    std::error_code ignored;  // nothing to report to at exit
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  pid_t owner_;
  std::filesystem::path path_;
};

}  // namespace

std::filesystem::path scratch_path(const std::string& name) {
  static const ScratchDir dir;  // thread-safe initialisation
  return dir.path() / name;
}

}  // namespace murmur::testing
