// murmur-run: starts a murmur job (like mpirun or horovodrun).
//
//   murmur-run -np 4 -- ./murmur-peer --epochs 5
//   murmur-run -np 8 --hostfile hosts.txt --summary run.json -- ./murmur-peer
//
// See docs/launcher.md.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/text.h"
#include "peer/launcher/hostfile.h"
#include "peer/launcher/job.h"
#include "peer/launcher/job_plan.h"
#include "peer/launcher/remote_command.h"
#include "peer/launcher/trace_merge.h"

namespace {

using murmur::peer::launcher::exit_status::kUsage;

int usage_error(const std::string& message) {
  std::fprintf(stderr, "murmur-run: %s\n", message.c_str());
  return kUsage;
}

// mpirun and horovodrun spell it "-np"; CLI11 wants one letter after a single
// dash, so "-np" becomes "--np" (only before the program).
std::vector<std::string> normalise_arguments(int argc, char** argv) {
  std::vector<std::string> args;
  bool program = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") program = true;
    if (!program && (a == "-np" || a.rfind("-np=", 0) == 0)) a = "-" + a;
    args.push_back(a);
  }
  return args;
}

// Everything the flags fill in.
struct CommandLine {
  murmur::peer::launcher::LaunchOptions options;
  std::string on_failure = "continue";
  std::string hostfile;
  std::string host_list;
};

// --on-failure, --min-np, --max-restarts (failure_policy.h).
void add_failure_flags(CLI::App& app, CommandLine& cl) {
  auto& policy = cl.options.policy;
  app.add_option("--on-failure", cl.on_failure,
                 "when a peer exits non-zero or by a signal: continue (go on without it), stop (stop every "
                 "peer and fail) or restart (start the rank again, up to --max-restarts times, then continue)")
      ->check(CLI::IsMember({"continue", "stop", "restart"}))
      ->capture_default_str();
  app.add_option("--min-np", policy.min_np,
                 "the job succeeds when this many peers finish with status 0, and is stopped once fewer can "
                 "(continue, restart). Default: half of -np, rounded up")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-restarts", policy.max_restarts, "restarts per rank under --on-failure restart")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

void add_flags(CLI::App& app, CommandLine& cl) {
  auto& options = cl.options;
  app.add_option("-n,--np", options.np, "number of peers (ranks); -np works too. Default: the slots of the hosts")
      ->check(CLI::Range(1, 1 << 20));
  auto* file_opt = app.add_option("--hostfile", cl.hostfile,
                                  "hostfile: 'host slots=N', 'host:N' or 'host' per line, '#' comments. "
                                  "Default: all peers on this host");
  app.add_option("-H,--hosts", cl.host_list, "hosts as h1:4,h2:4 (slots after ':', default 1)")->excludes(file_opt);
  app.add_option("--profile", options.profile,
                 "link emulation profile for every peer (MURMUR_LINK_PROFILE), e.g. 10gbe. Default: none");
  app.add_option("--interface", options.interface,
                 "every peer binds its data plane to this interface (ib0) or subnet (10.0.0.0/24) "
                 "(MURMUR_INTERFACE). Default: murmur's choice");
  app.add_option("--summary", options.summary_path, "write a JSON summary of the results here. Default: none");
  app.add_option("--trace", options.trace_dir,
                 "each peer writes its timeline to DIR/rank-N.json (MURMUR_TRACE); at the end they are merged "
                 "into DIR/trace.json for Perfetto (docs/trace.md). Default: none");
  app.add_option("--ssh", options.ssh_template,
                 "command that starts a peer on another host; {host} and {command} are replaced")
      ->capture_default_str();
  app.add_option("--rendezvous-host", options.rendezvous_host,
                 "address remote peers reach this launcher at. Default: this host's name");
  app.add_option("--timeout", options.timeout_seconds, "stop the whole job after this many seconds; 0: never")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--kill-grace", options.kill_grace_seconds, "seconds between SIGTERM and SIGKILL when stopping peers")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--token", options.token, "rendezvous token (MURMUR_TOKEN). Default: a random one");
  app.add_option("--rendezvous-port", options.rendezvous_port,
                 "port the job's rendezvous listens on (where --join finds it). Default: any free port");
  app.add_option("--join", options.join_address,
                 "add the -np peers to the running job whose rendezvous is at HOST:PORT (needs its --token)");
  add_failure_flags(app, cl);
  // The program and its arguments: everything after "--" (or after the first
  // word that is not one of ours).
  app.prefix_command();
  app.footer(
      "Exit status: 0 when --min-np peers finished with status 0 (every peer under --on-failure stop),\n"
      "1 otherwise or when a peer could not start, 2 for bad flags or hosts, 124 after --timeout,\n"
      "128+N after signal N. See docs/launcher.md.");
}

// Parses the flags and takes the program to run from what follows them.
// Returns the exit status when murmur-run must stop here (help, a usage
// error), nullopt to go on.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, CommandLine& cl) {
  auto args = normalise_arguments(argc, argv);
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(std::string(e.what()) + " (see --help)");
  }
  // prefix_command() also stops at a flag it does not know: that is a typo
  // unless "--" came first.
  auto& command = cl.options.command;
  command = app.remaining();
  if (!command.empty() && command.front() == "--") {
    command.erase(command.begin());
  } else if (!command.empty() && command.front().starts_with("-")) {
    return usage_error("unknown flag '" + command.front() + "' (the program and its arguments go after --)");
  }
  if (command.empty()) return usage_error("no program to run (usage: murmur-run -np N [options] -- PROGRAM ARGS...)");
  return std::nullopt;
}

// --trace: the peers' files into one. A failed merge is reported, but the
// job's exit status stays the job's.
void merge_peer_traces(const std::string& dir) {
  try {
    const auto merged = murmur::peer::launcher::merge_traces(dir);
    for (const auto& problem : merged.problems)
      std::fprintf(stderr, "murmur-run: trace: skipped %s\n", problem.c_str());
    std::fprintf(stderr, "murmur-run: trace of %d peers in %s (clocks aligned on the %s)\n", merged.peers,
                 merged.path.c_str(), merged.clock.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "murmur-run: %s\n", e.what());
  }
}

// Reads the hosts, sizes the job from them when -np is not given, and runs
// it. Returns murmur-run's exit status.
int launch(const CLI::App& app, CommandLine& cl) {
  auto& options = cl.options;
  try {
    if (!cl.hostfile.empty()) {
      options.hosts = murmur::peer::launcher::read_hostfile(cl.hostfile);
      options.hosts_source = cl.hostfile;
    } else if (!cl.host_list.empty()) {
      options.hosts = murmur::peer::launcher::parse_host_list(cl.host_list);
      options.hosts_source = "-H";
    }
    if (app.count("--np") == 0) {
      if (options.hosts.empty()) return usage_error("-np is required when no --hostfile or -H is given");
      options.np = 0;
      for (const auto& h : options.hosts) options.np += h.slots;
    }
    options.policy.on_failure = *murmur::peer::launcher::parse_on_failure(cl.on_failure);
    if (app.count("--min-np") == 0) {
      options.policy.min_np = murmur::peer::launcher::default_min_np(options.np);
    } else if (options.policy.min_np > options.np) {
      return usage_error("--min-np " + std::to_string(options.policy.min_np) + " is above -np " +
                         std::to_string(options.np));
    }
    if (!options.join_address.empty()) {
      if (options.token.empty()) return usage_error("--join needs the running job's --token");
      const auto colon = options.join_address.rfind(':');
      int port = 0;
      if (colon == std::string::npos || colon == 0 ||
          !murmur::parse_number(std::string_view(options.join_address).substr(colon + 1), port) || port < 1 ||
          port > 65535)
        return usage_error("--join '" + options.join_address + "': expected host:port");
    }
    options.live_progress = ::isatty(STDOUT_FILENO) == 1;
    if (!options.trace_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(options.trace_dir, ec);
      if (ec) return usage_error("--trace " + options.trace_dir + ": cannot create it: " + ec.message());
      options.trace_dir = std::filesystem::absolute(options.trace_dir).lexically_normal().string();
    }
    const int status = murmur::peer::launcher::run_job(options);
    if (!options.trace_dir.empty()) merge_peer_traces(options.trace_dir);
    return status;
  } catch (const murmur::peer::launcher::HostfileError& e) {
    return usage_error(e.what());
  } catch (const murmur::peer::launcher::SlotError& e) {
    return usage_error(e.what());
  } catch (const murmur::peer::launcher::TemplateError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "murmur-run: %s\n", e.what());
    return murmur::peer::launcher::exit_status::kPeerFailed;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine cl;
  CLI::App app{
      "murmur-run -np N [options] -- PROGRAM ARGS...\n"
      "Starts a murmur job: N peers here or on the hosts given, a rendezvous for them, their output\n"
      "prefixed by rank, progress, a result table and an optional JSON summary.",
      "murmur-run"};
  add_flags(app, cl);
  if (auto stop = parse_command_line(app, argc, argv, cl)) return *stop;
  return launch(app, cl);
}
