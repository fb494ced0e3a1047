// A directory of this test process's own for the files a test writes
// (TMPDIR or /tmp, then murmur-test-<pid>): ctest runs a binary's cases as
// parallel processes, so each gets its own, and it is removed with
// everything in it when the process that made it exits (not a forked
// child), so that runs leave nothing behind.
// Thread safety: scratch_path may be called from any thread.
#pragma once

#include <filesystem>
#include <string>

namespace murmur::testing {

// `name` inside the directory, which exists once this returns.
std::filesystem::path scratch_path(const std::string& name);

}  // namespace murmur::testing
