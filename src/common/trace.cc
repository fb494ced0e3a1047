// The recorder: one buffer per thread, registered with the session on the
// thread's first record, so that recording threads never contend with each
// other (each takes only its own buffer's mutex, which only the session's
// end takes too).
#include "common/trace.h"

#include <unistd.h>

#include <fstream>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/trace_data.h"

namespace murmur::trace {

namespace detail {
std::atomic<bool> g_recording{false};
}

namespace {

using detail::Event;
using detail::Phase;

struct ThreadLog {
  std::mutex mutex;  // guards events and name; taken after g_mutex, never before
  detail::ThreadEvents data;
};

std::mutex g_mutex;           // guards the session state below
std::uint64_t g_session = 0;  // the recording session's number; 0: none
std::vector<std::shared_ptr<ThreadLog>> g_threads;
detail::TraceData g_header;  // everything but the threads' events
std::size_t g_max_events = 0;
std::atomic<std::uint64_t> g_session_now{0};  // g_session, read without the lock
std::atomic<std::size_t> g_recorded{0};
std::atomic<std::uint64_t> g_dropped{0};

struct ThisThread {
  std::uint64_t session = 0;
  std::shared_ptr<ThreadLog> log;
  std::string name;
};
thread_local ThisThread t_this;

// The calling thread's buffer in the recording session, or null.
ThreadLog* this_thread_log() {
  const std::uint64_t session = g_session_now.load(std::memory_order_acquire);
  if (session == 0) return nullptr;
  if (t_this.session == session) return t_this.log.get();
  std::lock_guard lock(g_mutex);
  if (g_session == 0) return nullptr;
  auto log = std::make_shared<ThreadLog>();
  log->data.tid = static_cast<long>(::gettid());
  log->data.name = t_this.name.empty() ? "thread " + std::to_string(log->data.tid) : t_this.name;
  g_threads.push_back(log);
  t_this.session = g_session;
  t_this.log = std::move(log);
  return t_this.log.get();
}

void record(Event event) {
  ThreadLog* log = this_thread_log();
  if (log == nullptr) return;
  if (g_recorded.fetch_add(1, std::memory_order_relaxed) >= g_max_events) {
    if (g_dropped.fetch_add(1, std::memory_order_relaxed) == 0)
      logger("trace")->warn("trace: {} events recorded, later ones are dropped (the file says how many)", g_max_events);
    return;
  }
  std::lock_guard lock(log->mutex);
  log->data.events.push_back(std::move(event));
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

std::string expand_rank(std::string path, int rank) {
  const std::string key = "{rank}";
  for (auto at = path.find(key); at != std::string::npos; at = path.find(key, at))
    path.replace(at, key.size(), std::to_string(rank));
  return path;
}

}  // namespace

const char* category_name(Category category) {
  switch (category) {
    case Category::kCompute:
      return "compute";
    case Category::kCompress:
      return "compress";
    case Category::kSend:
      return "send";
    case Category::kRecv:
      return "recv";
    case Category::kWait:
      return "wait";
    case Category::kGossip:
      return "gossip";
    case Category::kSchedule:
      return "schedule";
    case Category::kView:
      return "view";
    case Category::kStep:
      return "step";
  }
  return "?";
}

void complete(Category category, const char* name, std::int64_t start_ns, std::int64_t end_ns, Args args) {
  if (!enabled()) return;
  record({start_ns, end_ns, name, category, Phase::kComplete, std::move(args)});
}

void instant(Category category, const char* name, Args args) {
  if (!enabled()) return;
  const auto now = now_ns();
  record({now, now, name, category, Phase::kInstant, std::move(args)});
}

void message(Category category, std::int64_t start_ns, std::int64_t end_ns, Args args) {
  if (!enabled()) return;
  record({start_ns, end_ns, category == Category::kSend ? "send" : "recv", category, Phase::kMessage, std::move(args)});
}

void name_thread(const char* name) {
  t_this.name = name;
  if (!enabled()) return;
  if (ThreadLog* log = this_thread_log()) {
    std::lock_guard lock(log->mutex);
    log->data.name = name;
  }
}

Session::Session(std::string path_template, SessionOptions options) : path_template_(std::move(path_template)) {
  std::lock_guard lock(g_mutex);
  if (g_session != 0) {
    logger("trace")->warn("trace: a trace is already recording in this process; {} will not be written",
                          path_template_);
    return;
  }
  static std::uint64_t sessions = 0;
  g_session = ++sessions;
  g_threads.clear();
  g_header = detail::TraceData{};
  g_header.host = host_name();
  g_header.boot_id = boot_id();
  g_header.origin_steady_ns = now_ns();
  g_header.origin_unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  g_header.label = g_header.host;
  g_max_events = options.max_events;
  g_recorded = 0;
  g_dropped = 0;
  active_ = true;
  g_session_now.store(g_session, std::memory_order_release);
  detail::g_recording.store(true, std::memory_order_relaxed);
}

Session::~Session() {
  try {
    write();
  } catch (const std::exception& e) {
    logger("trace")->error("{}", e.what());
  }
}

void Session::set_process(int rank, std::string label) {
  if (!active_) return;
  std::lock_guard lock(g_mutex);
  g_header.rank = rank;
  g_header.label = std::move(label);
}

std::string Session::write() {
  if (!active_ || written_) return "";
  written_ = true;
  detail::g_recording.store(false, std::memory_order_relaxed);
  detail::TraceData data;
  {
    std::lock_guard lock(g_mutex);
    g_session = 0;
    g_session_now.store(0, std::memory_order_release);
    data = std::move(g_header);
    // A thread that read `enabled()` just before the stop may still append
    // to its buffer: its lock orders that append before or after this move.
    for (auto& log : g_threads) {
      std::lock_guard thread_lock(log->mutex);
      data.threads.push_back(std::move(log->data));
    }
    g_threads.clear();
  }
  data.dropped_events = g_dropped.load();
  const std::string path = expand_rank(path_template_, data.rank);
  detail::write_trace_file(path, data);
  return path;
}

}  // namespace murmur::trace
