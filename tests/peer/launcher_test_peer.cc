// The peer program of the murmur-run tests (launcher_test.cc). It reads the
// MURMUR_* environment murmur-run gives it and, as its flags ask:
//   prints "hello from rank R of W local LR/LS host H launcher L cwd C
//   profile P interface I" on stdout and "stderr line from rank R" on stderr;
//   --pid-dir D      writes its pid to D/rank<R>.pid (and with --spawn-child
//                    starts `sleep 60` in its process group, pid in
//                    D/child<R>.pid);
//   --join           joins the real group through MURMUR_RENDEZVOUS and
//                    MURMUR_TOKEN and passes a barrier;
//   --events         emits two epochs of progress events and a result event;
//   --fail-rank R    rank R prints "rank R failing on purpose" on stderr and
//                    exits with --exit-code (after the join, when asked);
//   --sleep S        then sleeps S seconds (--ignore-term: through SIGTERM);
//   --crash-rank R   rank R exits with --exit-code while MURMUR_RESTART_COUNT
//                    (0 when unset) is below --crashes (default 1);
//   --chatter S      prints "tick N" on stdout and stderr every 50 ms for S
//                    seconds, with SIGPIPE ignored as murmur-peer does, then
//                    writes D/done<R> (--pid-dir D) saying how many writes
//                    failed with EPIPE;
//   --view G         emits a view event of generation G (3 members, rank 3
//                    lost);
//   --list-fds       first prints "fds: 0 1 2 ..." (the descriptors it
//                    inherited, ascending) and "job token: N characters,
//                    on the command line: no";
// and ends with "bye from rank R" without a newline. A restarted peer
// (MURMUR_RESTART_COUNT set) also prints "restart count N".
#include <CLI/CLI.hpp>

#include <dirent.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "fabric/group.h"
#include "peer/events/peer_events.h"

extern char** environ;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int env_int(const char* name) {
  auto v = env(name);
  if (v.empty()) throw std::runtime_error(std::string(name) + " is not set");
  return std::stoi(v);
}

// Written whole under its final name, so a test never reads half a pid.
void write_pid(const std::string& dir, const std::string& name, pid_t pid) {
  auto path = dir + "/" + name, temp = path + ".tmp";
  std::ofstream(temp) << pid << "\n";
  std::filesystem::rename(temp, path);
}

pid_t spawn_sleeper() {
  pid_t pid = -1;
  char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("60"), nullptr};
  if (posix_spawnp(&pid, "sleep", nullptr, nullptr, argv, environ) != 0) throw std::runtime_error("cannot spawn sleep");
  return pid;
}

void join_group(int rank, int size) {
  auto address = env("MURMUR_RENDEZVOUS");
  auto colon = address.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("MURMUR_RENDEZVOUS='" + address + "' is not host:port");
  murmur::fabric::GroupOptions options;
  options.rank = rank;
  options.size = size;
  options.rendezvous_host = address.substr(0, colon);
  options.rendezvous_port = static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1)));
  options.token = env("MURMUR_TOKEN");
  options.join_timeout = std::chrono::seconds(20);
  auto group = murmur::fabric::Group::join(options);
  group->barrier("launcher-test/joined", std::chrono::seconds(20));
  std::printf("joined group of %d\n", group->size());
}

void emit_events(int rank) {
  using murmur::peer::events::emit_event;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    for (int step = 1; step <= 3; ++step) {
      murmur::peer::events::ProgressEvent p{rank,       epoch,
                                            2,          step,
                                            3,          1.0 / (epoch * step),
                                            0.1 * step, static_cast<std::uint64_t>(1000 * (rank + 1) * step)};
      emit_event(to_json(p));
    }
  }
  // Rank 0 has no averaged model (null); the others agree on 0.9.
  murmur::peer::events::ResultEvent r{rank,
                                      0.5 + rank / 100.0,
                                      rank == 0 ? std::numeric_limits<double>::quiet_NaN() : 0.9,
                                      static_cast<std::uint64_t>(1000 * (rank + 1)),
                                      static_cast<std::uint64_t>(2000 * (rank + 1)),
                                      0.25};
  auto event = to_json(r);
  event["model"] = "test";
  emit_event(event);
}

// Writes "tick N" lines for `seconds`; returns how many writes failed with
// EPIPE (murmur-run died and closed the pipes' other ends).
int chatter(int rank, double seconds) {
  int broken = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int n = 0; std::chrono::steady_clock::now() < end; ++n) {
    auto line = "tick " + std::to_string(n) + " from rank " + std::to_string(rank) + "\n";
    for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
      if (::write(fd, line.data(), line.size()) < 0 && errno == EPIPE) ++broken;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // stands in for a step of work
  }
  return broken;
}

// The descriptors open in this process (none opened yet but the listing's own).
std::string inherited_descriptors() {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) throw std::runtime_error("cannot list /proc/self/fd");
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::stoi(e->d_name);
    if (fd != ::dirfd(dir)) fds.push_back(fd);
  }
  ::closedir(dir);
  std::sort(fds.begin(), fds.end());
  std::string out;
  for (int fd : fds) out += (out.empty() ? "" : " ") + std::to_string(fd);
  return out;
}

// Whether `text` appears in this process's command line.
bool on_command_line(const std::string& text) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return !text.empty() && cmdline.find(text) != std::string::npos;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::filesystem::rename(path + ".tmp", path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"launcher_test_peer"};
  std::string pid_dir;
  bool spawn_child = false, join = false, events = false, ignore_term = false;
  int fail_rank = -1, exit_code = 3;
  double sleep_seconds = 0, chatter_seconds = 0;
  int crash_rank = -1, crashes = 1;
  std::int64_t view_generation = -1;
  bool list_fds = false;
  app.add_flag("--list-fds", list_fds);
  app.add_option("--pid-dir", pid_dir);
  app.add_flag("--spawn-child", spawn_child);
  app.add_flag("--join", join);
  app.add_flag("--events", events);
  app.add_option("--fail-rank", fail_rank);
  app.add_option("--exit-code", exit_code);
  app.add_option("--sleep", sleep_seconds);
  app.add_flag("--ignore-term", ignore_term);
  app.add_option("--crash-rank", crash_rank);
  app.add_option("--crashes", crashes);
  app.add_option("--chatter", chatter_seconds);
  app.add_option("--view", view_generation);
  CLI11_PARSE(app, argc, argv);
  try {
    if (list_fds) {
      // Before anything here opens a descriptor of its own.
      const std::string fds = inherited_descriptors();
      const std::string token = env("MURMUR_JOB_TOKEN");
      std::printf("fds: %s\njob token: %zu characters, on the command line: %s\n", fds.c_str(), token.size(),
                  on_command_line(token) ? "yes" : "no");
    }
    if (ignore_term) std::signal(SIGTERM, SIG_IGN);
    const int rank = env_int("MURMUR_RANK"), size = env_int("MURMUR_WORLD_SIZE");
    const auto or_unset = [&](const char* name) { return std::getenv(name) ? env(name) : std::string("(unset)"); };
    std::printf("hello from rank %d of %d local %d/%d host %s launcher %s cwd %s profile %s interface %s\n", rank, size,
                env_int("MURMUR_LOCAL_RANK"), env_int("MURMUR_LOCAL_SIZE"), env("MURMUR_HOST").c_str(),
                env("MURMUR_LAUNCHER").c_str(), std::filesystem::current_path().c_str(),
                or_unset("MURMUR_LINK_PROFILE").c_str(), or_unset("MURMUR_INTERFACE").c_str());
    const int restart_count = env("MURMUR_RESTART_COUNT").empty() ? 0 : env_int("MURMUR_RESTART_COUNT");
    if (!env("MURMUR_RESTART_COUNT").empty()) std::printf("restart count %d\n", restart_count);
    std::fflush(stdout);
    std::fprintf(stderr, "stderr line from rank %d\n", rank);
    if (!pid_dir.empty()) {
      if (spawn_child) write_pid(pid_dir, "child" + std::to_string(rank) + ".pid", spawn_sleeper());
      write_pid(pid_dir, "rank" + std::to_string(rank) + ".pid", ::getpid());
    }
    if (join) join_group(rank, size);
    if (events) emit_events(rank);
    if (view_generation >= 0) {
      murmur::peer::events::ViewEvent v{rank, static_cast<std::uint64_t>(view_generation), 3, {3}, {}, 0.5};
      murmur::peer::events::emit_event(to_json(v));
    }
    if (rank == crash_rank && restart_count < crashes) {
      std::fprintf(stderr, "rank %d crashing (restart count %d)\n", rank, restart_count);
      return exit_code;
    }
    if (chatter_seconds > 0) {
      murmur::peer::events::ignore_sigpipe();
      const int broken = chatter(rank, chatter_seconds);
      if (!pid_dir.empty()) write_text(pid_dir + "/done" + std::to_string(rank), std::to_string(broken) + "\n");
    }
    if (rank == fail_rank) {
      std::fprintf(stderr, "rank %d failing on purpose\n", rank);
      return exit_code;
    }
    if (sleep_seconds > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(sleep_seconds));
    }
    std::printf("bye from rank %d", rank);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "launcher_test_peer: %s\n", e.what());
    return 1;
  }
}
