// Console: everything murmur-run prints while its peers run.
//
// Peer lines get a "[rank] " prefix and keep their stream (stdout or
// stderr). Progress events become, on a terminal, ONE live line on stdout
// redrawn in place with '\r' at most every redraw_interval (slowest peer's
// epoch and step, mean loss, mean accuracy, megabytes sent by all peers);
// elsewhere one plain line per peer and epoch (the epoch's last known state,
// printed when the epoch completes or the next begins).
//
// Not thread-safe: the launcher's event loop owns it. Never blocks except on
// writes to the two FILEs.
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peer/events/peer_events.h"

namespace murmur::peer::launcher {

// How many peers run now and how many the job has lost (--on-failure).
struct PeerCounts {
  int live = 0;
  int lost = 0;
};

// "epoch 2/5 step 120/600  loss 0.4321  accuracy 0.8512  sent 12.3 MB  (3/4 peers)"
// from the latest progress of each rank (nullopt: none yet, or lost); once a
// peer is lost the parenthesis is "(3 live, 1 lost)".
std::string live_progress_text(const std::vector<std::optional<events::ProgressEvent>>& latest, PeerCounts counts = {});
// "progress epoch 2/5 step 600/600 loss 0.4321 accuracy 0.8512 sent 12.3 MB"
std::string plain_progress_text(const events::ProgressEvent& progress);

class Console {
 public:
  using Clock = std::chrono::steady_clock;

  Console(int np, bool live, std::FILE* out = stdout, std::FILE* err = stderr,
          Clock::duration redraw_interval = std::chrono::milliseconds(250));

  // Lines to stdout stay in its buffer until flush() (the event loop calls
  // it once per wake-up: a write per batch, not per line).
  void peer_line(int rank, bool from_stderr, std::string_view text);
  void flush();
  // One "murmur-run: <text>" line on stderr.
  void note(std::string_view text);
  // Plain text on stdout (the result table).
  void print(std::string_view text);
  void progress(int rank, const events::ProgressEvent& progress);
  // The rank's output has ended: prints its pending plain progress line.
  void peer_done(int rank);
  // The live and lost counts changed (a peer was lost or restarted). A lost
  // rank's last progress no longer counts for the slowest peer.
  void set_counts(PeerCounts counts);
  void forget_progress(int rank);
  // Live mode: when the pending redraw is due; nullopt when nothing waits.
  std::optional<Clock::time_point> redraw_due() const;
  void redraw(Clock::time_point now);
  // Erases the live line (before the result table and exit).
  void finish();

 private:
  void erase_live();
  void draw_live();
  void print_plain(int rank, const events::ProgressEvent& progress);

  bool live_;
  std::FILE* out_;
  std::FILE* err_;
  Clock::duration redraw_interval_;
  std::vector<std::optional<events::ProgressEvent>> latest_;
  PeerCounts counts_;
  // Plain mode: per rank, the event not yet printed and the last epoch printed.
  std::vector<std::optional<events::ProgressEvent>> pending_;
  std::vector<int> printed_epoch_;
  // Live mode.
  bool live_shown_ = false;
  bool dirty_ = false;
  Clock::time_point last_draw_{};
  std::string live_text_;
};

}  // namespace murmur::peer::launcher
