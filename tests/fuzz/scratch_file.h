// Writes a harness's input to a file of this process's own, for parsers
// that take a path (TMPDIR or /tmp; one path per harness and process).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

namespace murmur::fuzz {

inline std::string write_scratch_file(std::string_view harness, std::string_view bytes) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/murmur-fuzz-" + std::string(harness) + "-" +
                     std::to_string(::getpid());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

}  // namespace murmur::fuzz
