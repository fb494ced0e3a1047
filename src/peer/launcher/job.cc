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
#include "common/job_token.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "fabric/rendezvous/server.h"
#include "peer/events/peer_events.h"
#include "peer/launcher/console.h"
#include "peer/launcher/job_plan.h"
#include "peer/launcher/line_buffer.h"
#include "peer/launcher/membership.h"
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
    std::optional<Subprocess> process;  // the current attempt
    Stream out, err;
    std::string last_stderr;
    std::optional<std::string> failure;  // why it stopped the job (--on-failure stop, or cannot start)
    std::optional<nlohmann::json> result;
    bool finished = false;  // exited with status 0
    std::vector<PeerFailure> restarts;
    std::optional<PeerFailure> lost;
  };

  void start_rendezvous();
  std::vector<std::string> environment(const Placement& p, int restart_count) const;
  bool spawn(Peer& peer);
  void reap();
  // One failed process of `peer` (not one the launcher stopped); sets
  // stop_job when the policy says to stop every peer.
  void handle_failure(Peer& peer, int status, bool& stop_job);
  PeerFailure failure_of(Peer& peer, int status);
  void restart(Peer& peer, PeerFailure failure);
  void lose(Peer& peer, PeerFailure failure);
  // Stops the job when fewer than --min-np peers can still finish.
  void check_enough_peers();
  int count_running() const;
  double seconds_since_start() const;
  PeerRecord record_of(const Peer& peer) const;
  // Reads what the pipe holds, up to max_reads reads without waiting (after
  // a process exits, all it wrote is there).
  void read_available(Peer& peer, Stream& stream, int max_reads);
  void read_stream(Peer& peer, Stream& stream) { read_available(peer, stream, 1); }
  // Handles what the pipes of a process that is gone still hold, and stops
  // polling them (a restart gives the rank new ones).
  void retire_streams(Peer& peer);
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
  int finish();

  const LaunchOptions& options_;
  Console console_;
  std::vector<Peer> peers_;
  std::unique_ptr<fabric::rendezvous::Server> server_;
  std::string rendezvous_address_;
  std::string token_;
  // The secret the peers prove to each other at connection set-up
  // (common/job_token.h): $MURMUR_JOB_TOKEN when this process has one (so
  // that a later murmur-run --join can be given the same), else a fresh one.
  // Only ever in the peers' environment, never on a command line.
  std::string job_token_;
  Clock::time_point start_{};
  ViewLog views_;
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
  job_token_ = job_token::from_environment();
  const bool fresh_token = job_token_.empty() && options_.join_address.empty();
  if (fresh_token) job_token_ = job_token::generate();
  if (job_token_.empty()) job_token::note_unauthenticated("peer", "the job joined with --join");
  if (!options_.join_address.empty()) {
    // Peers added to a running job: its rendezvous, its token.
    rendezvous_address_ = options_.join_address;
    token_ = options_.token;
    return;
  }
  // The server's info lines (where it listens, who joined) are noise between
  // the peers' output; MURMUR_LOG_LEVEL still shows them.
  if (std::getenv("MURMUR_LOG_LEVEL") == nullptr) rendezvous_log().set_level(spdlog::level::warn);
  bool all_local = true;
  for (const auto& p : peers_) all_local = all_local && p.place.local;
  fabric::rendezvous::ServerOptions server_options;
  server_options.bind_host = all_local ? "127.0.0.1" : "0.0.0.0";
  token_ = options_.token.empty() ? random_token() : options_.token;
  server_options.token = token_;
  server_options.job_token = job_token_;
  server_options.port = options_.rendezvous_port;
  server_ = std::make_unique<fabric::rendezvous::Server>(server_options);
  std::string host =
      all_local ? "127.0.0.1" : (options_.rendezvous_host.empty() ? local_host_name() : options_.rendezvous_host);
  rendezvous_address_ = host + ":" + std::to_string(server_->port());
  // Where more peers can join it (murmur-run --join ADDRESS --token T): only
  // worth saying to whoever chose the token.
  if (!options_.token.empty()) console_.note("rendezvous at " + rendezvous_address_);
  // Its job token is never shown: a --join needs the one this job was
  // started with (docs/security.md).
  if (!options_.token.empty() && fresh_token) {
    console_.note(std::string("this job's ") + job_token::kEnvironmentVariable +
                  " is fresh and not shown: to add peers with --join later, start the job with it set");
  }
}

std::vector<std::string> Job::environment(const Placement& p, int restart_count) const {
  std::vector<std::string> env = {
      "MURMUR_RANK=" + std::to_string(p.rank),
      "MURMUR_WORLD_SIZE=" + std::to_string(options_.np),
      "MURMUR_LOCAL_RANK=" + std::to_string(p.local_rank),
      "MURMUR_LOCAL_SIZE=" + std::to_string(p.local_size),
      "MURMUR_RENDEZVOUS=" + rendezvous_address_,
      "MURMUR_TOKEN=" + token_,
      std::string(job_token::kEnvironmentVariable) + "=" + job_token_,
      "MURMUR_HOST=" + p.host,
      "MURMUR_LAUNCHER=murmur-run",
  };
  if (!options_.profile.empty()) env.push_back("MURMUR_LINK_PROFILE=" + options_.profile);
  if (!options_.interface.empty()) env.push_back("MURMUR_INTERFACE=" + options_.interface);
  if (!options_.trace_dir.empty()) env.push_back("MURMUR_TRACE=" + options_.trace_dir + "/rank-{rank}.json");
  // Only restarts have it: a peer may resume from a checkpoint, or tell the
  // others it is back.
  if (restart_count > 0) env.push_back("MURMUR_RESTART_COUNT=" + std::to_string(restart_count));
  if (!options_.join_address.empty()) env.push_back("MURMUR_JOIN=1");
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
    o.extra_env = environment(peer.place, static_cast<int>(peer.restarts.size()));
  } else {
    auto env = environment(peer.place, static_cast<int>(peer.restarts.size()));
    // The job token travels on ssh's stdin, not in the command line, which
    // ps shows on both hosts: the remote shell reads it into its
    // environment before running the peer.
    const std::string token_name = job_token::kEnvironmentVariable;
    std::erase_if(env, [&](const std::string& e) { return e.rfind(token_name + "=", 0) == 0; });
    auto line = remote_command_line(std::filesystem::current_path().string(), env, options_.command);
    if (!job_token_.empty()) {
      line = "IFS= read -r " + token_name + " && export " + token_name + " && " + line;
      o.stdin_data = job_token_ + "\n";
    }
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

int Job::count_running() const {
  int running = 0;
  for (const auto& p : peers_) running += p.process && p.process->running();
  return running;
}

double Job::seconds_since_start() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

PeerRecord Job::record_of(const Peer& p) const {
  return {p.place.rank, p.place.host, p.result, p.finished, p.restarts, p.lost};
}

void Job::reap() {
  bool stop_job = false;
  for (auto& p : peers_) {
    if (!p.process || !p.process->running()) continue;
    auto status = p.process->try_wait();
    if (!status) continue;
    // A killed shm user cannot unlink its region itself.
    if (p.place.local) remove_shm_regions_of(p.process->pid());
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
      p.finished = true;
    } else if (stop_ == Stop::kNone) {  // once the launcher is stopping the job, exits are its own doing
      handle_failure(p, *status, stop_job);
    }
  }
  if (stop_job) stop(Stop::kFailure, SIGTERM);
  check_enough_peers();
  int lost = 0;
  for (const auto& p : peers_) lost += p.lost.has_value();
  console_.set_counts({count_running(), lost});
}

void Job::handle_failure(Peer& p, int status, bool& stop_job) {
  switch (action_for_failure(options_.policy, static_cast<int>(p.restarts.size()))) {
    case FailureAction::kStopJob:
      p.failure = Subprocess::describe_status(status);
      stop_job = true;
      return;
    case FailureAction::kRestart:
      restart(p, failure_of(p, status));
      return;
    case FailureAction::kLose:
      lose(p, failure_of(p, status));
      return;
  }
}

PeerFailure Job::failure_of(Peer& p, int status) {
  // Its last words are in the pipes already: read them for last_stderr.
  for (Stream* s : {&p.out, &p.err}) read_available(p, *s, 16);
  PeerFailure f;
  f.seconds = seconds_since_start();
  f.reason = Subprocess::describe_status(status);
  if (WIFEXITED(status)) f.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) f.signal = WTERMSIG(status);
  f.last_stderr = p.last_stderr;
  return f;
}

void Job::restart(Peer& p, PeerFailure failure) {
  p.restarts.push_back(std::move(failure));
  console_.note(describe_restart(record_of(p), p.restarts.size()));
  retire_streams(p);
  // What the crashed attempt left in its group must not run beside the new one.
  p.process->signal_group(SIGKILL);
  p.last_stderr.clear();
  if (spawn(p)) return;
  // The program was there a moment ago; whatever took it, the rank is lost.
  lose(p, PeerFailure{seconds_since_start(), *p.failure, std::nullopt, std::nullopt, ""});
  p.failure.reset();
}

void Job::lose(Peer& p, PeerFailure failure) {
  p.lost = std::move(failure);
  // Children it left: the grace and SIGKILL of the job's end reach them if
  // they keep its pipes open.
  if (p.process) p.process->signal_group(SIGTERM);
  console_.forget_progress(p.place.rank);
  console_.note(describe_loss(record_of(p)) + fmt::format("; {} of {} peers running", count_running(), peers_.size()));
}

void Job::check_enough_peers() {
  if (stop_ != Stop::kNone || options_.policy.on_failure == OnFailure::kStop) return;
  int finished = 0;
  for (const auto& p : peers_) finished += p.finished;
  const int running = count_running();
  if (can_still_succeed(options_.policy, finished, running)) return;
  console_.note(fmt::format("{} finished and {} running peer(s) are fewer than --min-np {}; stopping the job", finished,
                            running, options_.policy.min_np));
  stop(Stop::kFailure, SIGTERM);
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
  const int running = count_running();
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
    } else if (kind == "view") {
      auto view = events::view_from_json(event);
      view.rank = rank;  // who sent it is known; what it claims is not trusted
      if (views_.add(view, seconds_since_start())) console_.note(describe_view(views_.views().back()));
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

void Job::read_available(Peer& peer, Stream& stream, int max_reads) {
  for (int i = 0; i < max_reads && stream.fd >= 0; ++i) {
    char buffer[1 << 16];
    ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      close_stream(peer, stream);
      return;
    }
    stream.lines.append(std::string_view(buffer, static_cast<std::size_t>(n)));
    while (auto line = stream.lines.next_line()) handle_line(peer, stream, *line);
  }
}

void Job::retire_streams(Peer& peer) {
  for (Stream* s : {&peer.out, &peer.err}) {
    if (s->fd >= 0) close_stream(peer, *s);
    s->lines = LineBuffer();
  }
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
  start_ = Clock::now();
  for (auto& p : peers_) {
    if (!spawn(p)) {
      stop(Stop::kFailure, SIGTERM);
      break;
    }
  }
  if (options_.timeout_seconds > 0) job_deadline_ = start_ + seconds(options_.timeout_seconds);
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
  return finish();
}

int Job::finish() {
  const double wall = seconds_since_start();
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
  int finished = 0;
  for (const auto& p : peers_) {
    records.push_back(record_of(p));
    any_result = any_result || p.result.has_value();
    finished += p.finished;
  }
  if (finished < options_.policy.min_np && options_.policy.on_failure != OnFailure::kStop) {
    console_.note(fmt::format("{} peer(s) finished, fewer than --min-np {}", finished, options_.policy.min_np));
    return exit_status::kPeerFailed;
  }
  if (any_result) console_.print(format_result_table(records, wall));
  console_.print(format_membership(records, views_.views(), options_.policy));
  if (!options_.summary_path.empty()) {
    try {
      auto summary = make_summary(records, wall, options_.command);
      summary.update(membership_summary(records, views_.views(), options_.policy));
      write_file_atomically(options_.summary_path, summary.dump(2) + "\n");
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
  if (options.policy.min_np < 1 || options.policy.min_np > options.np) {
    throw std::invalid_argument(fmt::format("--min-np {} is outside 1..{} (-np)", options.policy.min_np, options.np));
  }
  Job job(options, std::move(placements));
  return job.run();
}

}  // namespace murmur::peer::launcher
