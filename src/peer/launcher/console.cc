#include "peer/launcher/console.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <tuple>

#include <fmt/format.h>

namespace murmur::peer::launcher {

namespace {

std::string fraction_or_dash(double x) { return std::isfinite(x) ? fmt::format("{:.4f}", x) : "-"; }

std::size_t terminal_columns(std::FILE* out) {
  winsize ws{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) return ws.ws_col;
  return 80;
}

}  // namespace

std::string live_progress_text(const std::vector<std::optional<events::ProgressEvent>>& latest, PeerCounts counts) {
  const events::ProgressEvent* slowest = nullptr;
  double loss_sum = 0, accuracy_sum = 0;
  int loss_n = 0, accuracy_n = 0, reporting = 0;
  std::uint64_t sent = 0;
  for (const auto& p : latest) {
    if (!p) continue;
    ++reporting;
    if (!slowest || std::tie(p->epoch, p->step) < std::tie(slowest->epoch, slowest->step)) slowest = &*p;
    if (std::isfinite(p->loss)) loss_sum += p->loss, ++loss_n;
    if (std::isfinite(p->accuracy)) accuracy_sum += p->accuracy, ++accuracy_n;
    sent += p->bytes_sent;
  }
  if (!slowest) return "";
  auto peers = counts.lost > 0 ? fmt::format("{} live, {} lost", counts.live, counts.lost)
                               : fmt::format("{}/{} peers", reporting, latest.size());
  return fmt::format("epoch {}/{} step {}/{}  loss {}  accuracy {}  sent {:.1f} MB  ({})", slowest->epoch,
                     slowest->epochs, slowest->step, slowest->steps,
                     loss_n ? fmt::format("{:.4f}", loss_sum / loss_n) : "-",
                     accuracy_n ? fmt::format("{:.4f}", accuracy_sum / accuracy_n) : "-", sent / 1e6, peers);
}

std::string plain_progress_text(const events::ProgressEvent& p) {
  return fmt::format("progress epoch {}/{} step {}/{} loss {} accuracy {} sent {:.1f} MB", p.epoch, p.epochs, p.step,
                     p.steps, fraction_or_dash(p.loss), fraction_or_dash(p.accuracy), p.bytes_sent / 1e6);
}

Console::Console(int np, bool live, std::FILE* out, std::FILE* err, Clock::duration redraw_interval)
    : live_(live),
      out_(out),
      err_(err),
      redraw_interval_(redraw_interval),
      latest_(np),
      pending_(np),
      printed_epoch_(np, -1) {}

void Console::erase_live() {
  if (!live_shown_) return;
  std::fputs("\r\033[K", out_);
  live_shown_ = false;
}

void Console::draw_live() {
  if (live_text_.empty()) return;
  auto columns = terminal_columns(out_);
  // Wider than the terminal would wrap, and '\r' only returns to the start
  // of the last row: cut it.
  std::string text = live_text_.size() >= columns ? live_text_.substr(0, columns - 1) : live_text_;
  std::fputs("\r\033[K", out_);
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  live_shown_ = true;
}

void Console::peer_line(int rank, bool from_stderr, std::string_view text) {
  erase_live();
  auto line = fmt::format("[{}] {}\n", rank, text);
  if (from_stderr) {
    std::fflush(out_);
    std::fwrite(line.data(), 1, line.size(), err_);
    std::fflush(err_);
  } else {
    std::fwrite(line.data(), 1, line.size(), out_);
  }
  draw_live();
}

void Console::flush() { std::fflush(out_); }

void Console::note(std::string_view text) {
  erase_live();
  std::fflush(out_);
  auto line = fmt::format("murmur-run: {}\n", text);
  std::fwrite(line.data(), 1, line.size(), err_);
  std::fflush(err_);
  draw_live();
}

void Console::print(std::string_view text) {
  erase_live();
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

void Console::print_plain(int rank, const events::ProgressEvent& p) {
  auto line = fmt::format("[{}] {}\n", rank, plain_progress_text(p));
  std::fwrite(line.data(), 1, line.size(), out_);
  printed_epoch_[rank] = p.epoch;
}

void Console::progress(int rank, const events::ProgressEvent& p) {
  latest_[rank] = p;
  if (live_) {
    live_text_ = live_progress_text(latest_, counts_);
    dirty_ = true;
    redraw(Clock::now());
    return;
  }
  if (p.epoch <= printed_epoch_[rank]) return;  // that epoch has had its line
  auto& pending = pending_[rank];
  if (pending && pending->epoch != p.epoch) print_plain(rank, *pending);
  pending = p;
  if (p.steps > 0 && p.step >= p.steps) {
    print_plain(rank, p);
    pending.reset();
  }
}

void Console::peer_done(int rank) {
  if (live_ || !pending_[rank]) return;
  print_plain(rank, *pending_[rank]);
  pending_[rank].reset();
}

void Console::set_counts(PeerCounts counts) {
  counts_ = counts;
  if (!live_) return;
  live_text_ = live_progress_text(latest_, counts_);
  dirty_ = true;
}

void Console::forget_progress(int rank) {
  latest_[rank].reset();
  if (!live_) return;
  live_text_ = live_progress_text(latest_, counts_);
  dirty_ = true;
}

std::optional<Console::Clock::time_point> Console::redraw_due() const {
  if (!live_ || !dirty_) return std::nullopt;
  return last_draw_ + redraw_interval_;
}

void Console::redraw(Clock::time_point now) {
  if (!live_ || !dirty_ || now < last_draw_ + redraw_interval_) return;
  draw_live();
  dirty_ = false;
  last_draw_ = now;
}

void Console::finish() {
  erase_live();
  std::fflush(out_);
}

}  // namespace murmur::peer::launcher
