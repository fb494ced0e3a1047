// run_job: murmur-run's work once its flags are parsed. It hosts the
// rendezvous, starts every rank (here, or through the ssh template), relays
// their output, follows their events, and applies the failure policy when a
// peer fails (failure_policy.h: go on without it, restart it, or stop them
// all); it stops them all when fewer than --min-np can still finish, when
// the timeout passes or when murmur-run gets SIGINT/SIGTERM/SIGHUP.
//
// Blocking: runs until every peer has been reaped and its pipes closed.
// Signals: blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD in the calling thread
// and reads them from a signalfd; call it before any other thread starts
// (each thread must have them blocked, or the default action may kill the
// process while peers run). SIGPIPE is ignored so that a closed stdout is an
// error, not an orphaned job. Peers start with the default dispositions.
// Ownership: every peer leads its own process group; no path out of run_job
// leaves a group member behind that the launcher could reach (remote
// programs lose their ssh connection and the rendezvous instead).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "peer/launcher/failure_policy.h"
#include "peer/launcher/hostfile.h"
#include "peer/launcher/remote_command.h"

namespace murmur::peer::launcher {

struct LaunchOptions {
  int np = 1;
  std::vector<HostSlots> hosts;  // empty: np peers on this host
  std::string hosts_source;      // names the host list in messages
  std::string profile;           // MURMUR_LINK_PROFILE; empty: not set
  std::string interface;         // MURMUR_INTERFACE; empty: not set
  std::string summary_path;      // empty: no summary file
  // --trace: peers write their timelines here (MURMUR_TRACE=DIR/rank-{rank}.json,
  // an absolute path); empty: no trace.
  std::string trace_dir;
  std::string ssh_template = kDefaultSshTemplate;
  std::string rendezvous_host;  // advertised to remote peers; empty: this host's name
  // --join: the rendezvous (host:port) of a running job to add these peers
  // to (they get MURMUR_JOIN=1; no rendezvous is hosted here); needs token.
  std::string join_address;
  // Where a job's own rendezvous listens; 0: any free port.
  std::uint16_t rendezvous_port = 0;
  double timeout_seconds = 0;     // whole job; 0: none
  double kill_grace_seconds = 3;  // SIGTERM, then SIGKILL after this
  std::string token;              // empty: a random one
  std::vector<std::string> command;
  FailurePolicy policy;        // policy.min_np must be in [1, np]
  bool live_progress = false;  // one redrawn progress line (stdout is a terminal)
};

// murmur-run's exit statuses besides 128 + signal number.
namespace exit_status {
inline constexpr int kOk = 0;
inline constexpr int kPeerFailed = 1;
inline constexpr int kUsage = 2;
inline constexpr int kTimeout = 124;
}  // namespace exit_status

// Runs the job; returns murmur-run's exit status: kOk when --min-np peers
// finished with status 0 (every peer, under --on-failure stop), kPeerFailed
// otherwise. Throws SlotError (np over the slots), TemplateError (bad --ssh)
// and std::invalid_argument (min_np outside [1, np]) before starting
// anything.
int run_job(const LaunchOptions& options);

}  // namespace murmur::peer::launcher
