#include "peer/launcher/job.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "common/host.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "fabric/rendezvous/server.h"
#include "peer/events/peer_events.h"
#include "peer/launcher/console.h"
#include "peer/launcher/job_plan.h"
#include "peer/launcher/line_buffer.h"
#include "peer/launcher/report.h"
#include "peer/launcher/signal_fd.h"

namespace murmur::peer::launcher {

namespace {

using Clock = std::chrono::steady_clock;

std::string random_token() {
  std::random_device random;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", random(), random(), random(), random());
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

class Job {
 public:
  Job(const LaunchOptions& options, std::vector<Placement> placements)
      : options_(options), console_(options.np, options.live_progress) {
    peers_.reserve(placements.size());
    for (auto& p : placements) {
      peers_.emplace_back();
      peers_.back().place = std::move(p);
    }
  }

  int run();

 private:
  enum class Stop { kNone, kFailure, kTimeout, kSignal };

  struct Stream {
    int fd = -1;
    bool from_stderr = false;
    LineBuffer lines;
  };

  struct Peer {
    Placement place;
    std::optional<Subprocess> process;
    Stream out, err;
    std::string last_stderr;
    std::optional<std::string> failure;  // why it failed, when it is blamed
    std::optional<nlohmann::json> result;
  };

  void start_rendezvous();
  std::vector<std::string> environment(const Placement& p) const;
  bool spawn(Peer& peer);
  void reap();
  void read_stream(Peer& peer, Stream& stream);
  void handle_line(Peer& peer, const Stream& stream, const std::string& line);
  void close_stream(Peer& peer, Stream& stream);
  void stop(Stop why, int signo);
  void signal_all(int signo);
  bool any_running() const;
  bool has_open_stream(const Peer& peer) const { return peer.out.fd >= 0 || peer.err.fd >= 0; }
  std::optional<Clock::time_point> next_wake() const;
  // Waits (poll) for output, a signal or the next deadline, and handles them.
  void poll_once(SignalFd& signals, std::optional<Clock::time_point> wake);
  void check_deadlines(Clock::time_point now);
  int finish(Clock::time_point start);

  const LaunchOptions& options_;
  Console console_;
  std::vector<Peer> peers_;
  std::unique_ptr<fabric::rendezvous::Server> server_;
  std::string rendezvous_address_;
  std::string token_;
  Stop stop_ = Stop::kNone;
  int stop_signal_ = 0;
  std::optional<Clock::time_point> job_deadline_;  // --timeout
  std::optional<Clock::time_point> kill_at_;       // SIGKILL after the grace
  bool killed_ = false;
  // Peers gone but pipes still open (a descendant holds them): when to kill
  // their groups, then when to stop waiting for the pipes.
  std::optional<Clock::time_point> drain_deadline_;
  bool drain_killed_ = false;
};

void Job::start_rendezvous() {
  // The server's info lines (where it listens, who joined) are noise between
  // the peers' output; MURMUR_LOG_LEVEL still shows them.
  if (std::getenv("MURMUR_LOG_LEVEL") == nullptr) rendezvous_log().set_level(spdlog::level::warn);
  bool all_local = true;
  for (const auto& p : peers_) all_local = all_local && p.place.local;
  fabric::rendezvous::ServerOptions server_options;
  server_options.bind_host = all_local ? "127.0.0.1" : "0.0.0.0";
  token_ = options_.token.empty() ? random_token() : options_.token;
  server_options.token = token_;
  server_ = std::make_unique<fabric::rendezvous::Server>(server_options);
  std::string host =
      all_local ? "127.0.0.1" : (options_.rendezvous_host.empty() ? local_host_name() : options_.rendezvous_host);
  rendezvous_address_ = host + ":" + std::to_string(server_->port());
}

std::vector<std::string> Job::environment(const Placement& p) const {
  std::vector<std::string> env = {
      "MURMUR_RANK=" + std::to_string(p.rank),
      "MURMUR_WORLD_SIZE=" + std::to_string(options_.np),
      "MURMUR_LOCAL_RANK=" + std::to_string(p.local_rank),
      "MURMUR_LOCAL_SIZE=" + std::to_string(p.local_size),
      "MURMUR_RENDEZVOUS=" + rendezvous_address_,
      "MURMUR_TOKEN=" + token_,
      "MURMUR_HOST=" + p.host,
      "MURMUR_LAUNCHER=murmur-run",
  };
  if (!options_.profile.empty()) env.push_back("MURMUR_LINK_PROFILE=" + options_.profile);
  return env;
}

bool Job::spawn(Peer& peer) {
  Subprocess::Options o;
  // Peers never read the terminal: several processes competing for it (and
  // background process groups stopped by SIGTTIN) help nobody.
  o.stdin_path = "/dev/null";
  o.capture_output = true;
  o.search_path = true;
  o.own_process_group = true;
  if (peer.place.local) {
    o.argv = options_.command;
    o.extra_env = environment(peer.place);
  } else {
    auto line =
        remote_command_line(std::filesystem::current_path().string(), environment(peer.place), options_.command);
    o.argv = expand_ssh_template(options_.ssh_template, peer.place.host, line);
  }
  try {
    peer.process.emplace(o);
  } catch (const std::runtime_error& e) {
    peer.failure = e.what();
    return false;
  }
  peer.out.fd = peer.process->stdout_fd();
  peer.err.fd = peer.process->stderr_fd();
  peer.err.from_stderr = true;
  return true;
}

bool Job::any_running() const {
  for (const auto& p : peers_) {
    if (p.process && p.process->running()) return true;
  }
  return false;
}

void Job::reap() {
  bool failed = false;
  for (auto& p : peers_) {
    if (!p.process || !p.process->running()) continue;
    auto status = p.process->try_wait();
    if (!status) continue;
    // A killed shm user cannot unlink its region itself.
    if (p.place.local) remove_shm_regions_of(p.process->pid());
    bool ok = WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
    // Once the launcher is stopping the job, exits are its own doing.
    if (!ok && stop_ == Stop::kNone) {
      p.failure = Subprocess::describe_status(*status);
      failed = true;
    }
  }
  if (failed) stop(Stop::kFailure, SIGTERM);
}

void Job::signal_all(int signo) {
  for (auto& p : peers_) {
    // A group whose leader is gone but whose pipe is still open has members
    // left (a wrapper's children): they get the signal too.
    if (p.process && (p.process->running() || has_open_stream(p))) p.process->signal_group(signo);
  }
}

void Job::stop(Stop why, int signo) {
  if (stop_ != Stop::kNone) {
    // A second SIGINT/SIGTERM: no more grace.
    if (why == Stop::kSignal && !killed_) kill_at_ = Clock::now();
    return;
  }
  stop_ = why;
  stop_signal_ = signo;
  int running = 0;
  for (const auto& p : peers_) running += p.process && p.process->running();
  if (why == Stop::kTimeout) {
    console_.note(
        fmt::format("the job ran past --timeout {} s; stopping {} running peer(s)", options_.timeout_seconds, running));
  } else if (why == Stop::kSignal) {
    const char* name = sigabbrev_np(signo);
    console_.note(fmt::format("got SIG{}; stopping {} running peer(s)", name ? name : std::to_string(signo), running));
  }
  signal_all(signo);
  kill_at_ = Clock::now() + seconds(options_.kill_grace_seconds);
}

void Job::handle_line(Peer& peer, const Stream& stream, const std::string& line) {
  const int rank = peer.place.rank;
  if (!events::is_event_line(line)) {
    console_.peer_line(rank, stream.from_stderr, line);
    if (stream.from_stderr) {
      auto text = line;
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (!text.empty()) peer.last_stderr = text;
    }
    return;
  }
  try {
    auto event = events::parse_event(line);
    const auto kind = event["event"].get<std::string>();
    if (kind == "progress") {
      console_.progress(rank, events::progress_from_json(event));
    } else if (kind == "result") {
      events::result_from_json(event);  // checks the keys the table and summary read
      peer.result = std::move(event);
    }
    // Other kinds are for newer launchers: ignored.
  } catch (const events::EventError& e) {
    console_.note(fmt::format("rank {}: ignored a malformed event line ({})", rank, e.what()));
  }
}

void Job::close_stream(Peer& peer, Stream& stream) {
  while (auto line = stream.lines.next_line()) handle_line(peer, stream, *line);
  if (auto rest = stream.lines.take_rest()) handle_line(peer, stream, *rest);
  // The Subprocess owns the descriptor and closes it; the job stops polling.
  stream.fd = -1;
  if (!has_open_stream(peer)) console_.peer_done(peer.place.rank);
}

void Job::read_stream(Peer& peer, Stream& stream) {
  char buffer[1 << 16];
  ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    close_stream(peer, stream);
    return;
  }
  stream.lines.append(std::string_view(buffer, static_cast<std::size_t>(n)));
  while (auto line = stream.lines.next_line()) handle_line(peer, stream, *line);
}

std::optional<Clock::time_point> Job::next_wake() const {
  std::optional<Clock::time_point> wake = console_.redraw_due();
  auto earliest = [&](std::optional<Clock::time_point> t) {
    if (t && (!wake || *t < *wake)) wake = t;
  };
  if (stop_ == Stop::kNone) earliest(job_deadline_);
  if (!killed_) earliest(kill_at_);
  earliest(drain_deadline_);
  return wake;
}

void Job::poll_once(SignalFd& signals, std::optional<Clock::time_point> wake) {
  std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
  std::vector<std::pair<Peer*, Stream*>> owners{{nullptr, nullptr}};
  for (auto& p : peers_) {
    for (Stream* s : {&p.out, &p.err}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      owners.emplace_back(&p, s);
    }
  }
  int timeout_ms = -1;
  if (wake) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*wake - Clock::now()).count();
    timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
  }
  int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  if (n <= 0) return;
  if (fds[0].revents) {
    bool child = false;
    while (int signo = signals.next()) {
      if (signo == SIGCHLD)
        child = true;
      else
        stop(Stop::kSignal, signo);
    }
    if (child) reap();
  }
  for (std::size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents) read_stream(*owners[i].first, *owners[i].second);
  }
}

void Job::check_deadlines(Clock::time_point now) {
  if (stop_ == Stop::kNone && job_deadline_ && now >= *job_deadline_) stop(Stop::kTimeout, SIGTERM);
  if (!killed_ && kill_at_ && now >= *kill_at_) {
    signal_all(SIGKILL);
    killed_ = true;
  }
  if (!drain_deadline_ || now < *drain_deadline_) return;
  if (!drain_killed_) {
    signal_all(SIGKILL);
    drain_killed_ = true;
    drain_deadline_ = now + std::chrono::seconds(1);
    return;
  }
  for (auto& p : peers_) {  // nothing more will come that is worth waiting for
    for (Stream* s : {&p.out, &p.err}) {
      if (s->fd >= 0) close_stream(p, *s);
    }
  }
}

int Job::run() {
  SignalFd signals({SIGINT, SIGTERM, SIGHUP, SIGCHLD});
  std::signal(SIGPIPE, SIG_IGN);
  start_rendezvous();
  const auto start = Clock::now();
  for (auto& p : peers_) {
    if (!spawn(p)) {
      stop(Stop::kFailure, SIGTERM);
      break;
    }
  }
  if (options_.timeout_seconds > 0) job_deadline_ = start + seconds(options_.timeout_seconds);
  for (;;) {
    bool open = false;
    for (const auto& p : peers_) open = open || has_open_stream(p);
    const bool running = any_running();
    if (!running && !open) break;
    if (!running && !drain_deadline_) drain_deadline_ = Clock::now() + seconds(options_.kill_grace_seconds);
    poll_once(signals, next_wake());
    console_.flush();
    const auto now = Clock::now();
    console_.redraw(now);
    check_deadlines(now);
  }
  return finish(start);
}

int Job::finish(Clock::time_point start) {
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  console_.finish();
  if (stop_ == Stop::kSignal) return 128 + stop_signal_;
  if (stop_ == Stop::kTimeout) return exit_status::kTimeout;
  if (stop_ == Stop::kFailure) {
    for (const auto& p : peers_) {
      if (!p.failure) continue;
      std::string tail = p.last_stderr.empty() ? "no stderr output" : "last stderr line: '" + p.last_stderr + "'";
      // A peer that could not start has no output: its reason says it all.
      console_.note(p.process ? fmt::format("rank {} ({}): {}; {}", p.place.rank, p.place.host, *p.failure, tail)
                              : fmt::format("rank {} ({}): {}", p.place.rank, p.place.host, *p.failure));
    }
    return exit_status::kPeerFailed;
  }
  std::vector<PeerRecord> records;
  bool any_result = false;
  for (const auto& p : peers_) {
    records.push_back({p.place.rank, p.place.host, p.result});
    any_result = any_result || p.result.has_value();
  }
  if (any_result) console_.print(format_result_table(records, wall));
  if (!options_.summary_path.empty()) {
    try {
      write_file_atomically(options_.summary_path, make_summary(records, wall, options_.command).dump(2) + "\n");
    } catch (const std::runtime_error& e) {
      console_.note(fmt::format("--summary: {}", e.what()));
      return exit_status::kPeerFailed;
    }
  }
  return exit_status::kOk;
}

}  // namespace

int run_job(const LaunchOptions& options) {
  if (options.command.empty()) throw std::invalid_argument("run_job: no program");
  auto placements = place_ranks(options.np, options.hosts, options.hosts_source);
  bool any_remote = false;
  for (const auto& p : placements) any_remote = any_remote || !p.local;
  if (any_remote) expand_ssh_template(options.ssh_template, "host", "command");  // throws TemplateError
  Job job(options, std::move(placements));
  return job.run();
}

}  // namespace murmur::peer::launcher
