// The timeline: Chrome trace-event records of where a process's time goes
// (compute, compression, each message, waits, scheduler decisions, views),
// written as JSON that Perfetto and chrome://tracing open (docs/trace.md).
//
//   trace::Session session("run/rank-{rank}.json");   // recording from here
//   session.set_process(rank, "rank 3 (node-7)");
//   { trace::Scope s(trace::Category::kCompute, "forward_backward"); ... }
//   // session's destructor writes the file
//
// Process-wide, like the loggers (log.h): a record is made deep inside the
// gossip, the fabric and the trainer, and threading a recorder through every
// constructor of every layer would touch each of their interfaces for a
// switch that is off in production. At most one Session records at a time;
// a second one, while the first lives, records nothing and writes nothing
// (its active() is false), so that two Peers in one process share the first.
//
// Cost: when no session records, every call below is one relaxed atomic
// load and a branch (enabled()). When one does, a record is two steady-clock
// reads and an append to the calling thread's own buffer under that
// buffer's uncontended mutex; nothing is written until the session ends.
// A session keeps at most max_events records (then counts the rest as
// dropped, says so once in the log and in the file).
//
// Clock: records carry steady_clock (CLOCK_MONOTONIC) nanoseconds; the file
// states the session's origin on both the steady and the wall clock and the
// host's boot id, so that a merge (trace_merge.h) can align processes.
//
// Thread safety: every function may be called from any thread. Blocking:
// records never block on I/O; Session's destructor writes the file.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace murmur::trace {

// What a record is about; the summary (bench/trace/summarize.py) splits a
// step by these names, which are written as the events' "cat".
enum class Category : std::uint8_t {
  kCompute,   // forward/backward, optimizer, evaluation
  kCompress,  // encode / decode of a compressor
  kSend,      // a message from post to completion (async)
  kRecv,      // a receive from post to completion (async)
  kWait,      // a thread blocked on the network or on the gossip thread
  kGossip,    // a gossip round, a step handed to the gossip
  kSchedule,  // a scheduler decision (instant)
  kView,      // a membership view change (instant)
  kStep,      // one training step of the caller
};
const char* category_name(Category category);

namespace detail {
extern std::atomic<bool> g_recording;
}

// True while a session records. One relaxed load: free when off.
inline bool enabled() noexcept { return detail::g_recording.load(std::memory_order_relaxed); }

// steady_clock nanoseconds (the records' clock).
inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Optional facts of a record; -1 / empty when not known.
struct Args {
  int peer = -1;            // the neighbour of a message
  std::int64_t bytes = -1;  // bytes of a message or an encoded tensor
  std::uint64_t tag = 0;    // a message's tag (matches a send to its receive)
  std::string detail;       // free text (a decision's JSON, a view's members)
};

// A span [start_ns, end_ns] on the calling thread ("X" event). `name` must
// be a string literal (records keep the pointer).
void complete(Category category, const char* name, std::int64_t start_ns, std::int64_t end_ns, Args args = {});
// A point in time on the calling thread ("i" event).
void instant(Category category, const char* name, Args args = {});
// A message's life from its post to its completion, which usually happen
// on different threads ("b"/"e" async events, one track per neighbour).
void message(Category category, std::int64_t start_ns, std::int64_t end_ns, Args args);
// Names the calling thread in the timeline ("main", "gossip", ...).
void name_thread(const char* name);

// A span from construction to destruction on the calling thread. Records
// nothing when no session was recording at construction.
class Scope {
 public:
  Scope(Category category, const char* name) noexcept
      : category_(category), name_(name), start_ns_(enabled() ? now_ns() : -1) {}
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope() {
    if (start_ns_ >= 0) complete(category_, name_, start_ns_, now_ns(), std::move(args_));
  }
  // Facts known only later (a message's size); ignored when not recording.
  Args& args() { return args_; }

 private:
  Category category_;
  const char* name_;
  std::int64_t start_ns_;
  Args args_;
};

struct SessionOptions {
  std::size_t max_events = 2'000'000;  // about 100 bytes each
};

// Records from construction to destruction, then writes the trace to
// `path_template` with "{rank}" replaced by set_process's rank. A failure to
// write is logged (naming the path), never thrown from the destructor; call
// write() first to see it as an exception.
class Session {
 public:
  explicit Session(std::string path_template, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // False when another session was already recording (this one is inert).
  bool active() const { return active_; }
  // The process row of the timeline: pid = rank, and its label.
  void set_process(int rank, std::string label);
  // Stops recording and writes the file (once; the destructor then does
  // nothing). Throws std::runtime_error naming the path when it cannot.
  // Returns the path written, or "" for an inert session.
  std::string write();

 private:
  std::string path_template_;
  bool active_ = false;
  bool written_ = false;
};

}  // namespace murmur::trace
