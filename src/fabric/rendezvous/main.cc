// murmur-rendezvous: a standalone rendezvous server (server.h) for clusters
// that do not host it in murmur-run or rank 0.
//
// Prints "murmur-rendezvous listening on HOST:PORT" once it accepts
// connections; exits 0 on SIGINT or SIGTERM, 1 when it cannot start, 2 on a
// bad command line.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "common/job_token.h"
#include "fabric/errors.h"
#include "fabric/rendezvous/server.h"

int main(int argc, char** argv) {
  namespace rdv = murmur::fabric::rendezvous;
  rdv::ServerOptions options;
  long heartbeat_timeout_ms = options.heartbeat_timeout.count();
  long max_message_bytes = static_cast<long>(options.max_message_bytes);

  CLI::App app{"murmur-rendezvous: the control-plane server murmur peers meet at"};
  // Required, but checked after unknown flags so that a typo is named first.
  app.add_option("--port", options.port, "TCP port to listen on (0: pick one); required");
  app.add_option("--bind", options.bind_host, "address to listen on")->capture_default_str();
  app.add_option("--token", options.token, "cluster token members must present")->envname("MURMUR_TOKEN");
  app.add_option("--heartbeat-timeout-ms", heartbeat_timeout_ms,
                 "declare a member lost after this long without a heartbeat")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-message-bytes", max_message_bytes, "largest message accepted from a client")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.allow_extras();
  // From the environment only: a command line is visible to every user (ps).
  options.job_token = murmur::job_token::from_environment();
  app.footer(
      "MURMUR_JOB_TOKEN (environment only): members must prove this job token in their Hello; unset: anyone who "
      "reaches the port is believed (docs/security.md)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "murmur-rendezvous: " << e.what() << " (see --help)\n";
    return 2;
  }
  if (!app.remaining().empty()) {
    std::string unknown;
    for (const auto& arg : app.remaining()) unknown += " " + arg;
    std::cerr << "murmur-rendezvous: unknown argument(s):" << unknown << " (see --help)\n";
    return 2;
  }
  if (app.count("--port") == 0) {
    std::cerr << "murmur-rendezvous: --port is required (see --help)\n";
    return 2;
  }
  options.heartbeat_timeout = std::chrono::milliseconds(heartbeat_timeout_ms);
  options.max_message_bytes = static_cast<std::size_t>(max_message_bytes);

  // Block the signals before the server's thread starts so that only
  // sigwait() below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    rdv::Server server(options);
    std::cout << "murmur-rendezvous listening on " << options.bind_host << ":" << server.port() << std::endl;
    int signal = 0;
    sigwait(&signals, &signal);
    std::cerr << "murmur-rendezvous: " << (signal == SIGINT ? "SIGINT" : "SIGTERM") << ", stopping\n";
  } catch (const murmur::fabric::FabricError& e) {
    std::cerr << "murmur-rendezvous: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
