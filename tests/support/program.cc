#include "tests/support/program.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <sstream>

#include "common/subprocess.h"

namespace murmur::testing {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProgramRun run_program(const std::vector<std::string>& argv, std::chrono::seconds timeout, bool merge_stderr) {
  // Output goes to files, not pipes: nothing to drain while waiting, and a
  // chatty program cannot block on a full pipe.
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() /
                   ("murmur-run-program-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  Subprocess::Options options;
  options.argv = argv;
  options.stdin_path = "/dev/null";
  options.stdout_path = (dir / "out").string();
  options.stderr_path = merge_stderr ? "=stdout" : (dir / "err").string();
  options.own_process_group = true;
  ProgramRun run;
  {
    Subprocess child(options);
    const auto status = child.wait_until(std::chrono::steady_clock::now() + timeout);
    if (status) run.status = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
  }  // a child still running is killed here, with its group
  run.out = read_file(dir / "out");
  if (!merge_stderr) run.err = read_file(dir / "err");
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return run;
}

}  // namespace murmur::testing
