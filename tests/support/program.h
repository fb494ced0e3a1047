// Running one program to its end from a test and reading what it printed:
// what the murmur-run and murmur-peer job tests use (launcher_test,
// train_job_test). murmur_topo_cli_test and murmur_sim_cli_test still wrap
// popen themselves.
//
// Blocking: run_program blocks until the program exits or the timeout
// passes (then it is killed, with its process group). Thread safety: none
// needed; each call owns its child and its temporary files.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace murmur::testing {

// The whole file, or "" when it cannot be read.
std::string read_file(const std::filesystem::path& path);

struct ProgramRun {
  // The exit status; 128 + N after signal N; -1 when it did not finish in
  // time (it was killed).
  int status = -1;
  std::string out;  // stdout, and stderr too when merge_stderr
  std::string err;  // stderr, unless merged
};

// Runs argv (argv[0] a path) with stdin from /dev/null.
ProgramRun run_program(const std::vector<std::string>& argv, std::chrono::seconds timeout, bool merge_stderr = false);

}  // namespace murmur::testing
