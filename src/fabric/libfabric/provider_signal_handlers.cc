#include "fabric/libfabric/provider_signal_handlers.h"

#include <dlfcn.h>
#include <signal.h>

#include <array>
#include <cstring>
#include <string_view>

namespace murmur::fabric::libfabric {
namespace {

// Libraries known to take signals when they load (the header says why).
// Matched on the file name's prefix, so any soname version matches.
constexpr std::array<std::string_view, 1> kSignalTakingLibraries = {"libinfinipath.so"};

bool is_signal_taking_library(const char* path) {
  if (path == nullptr) return false;
  std::string_view name(path);
  if (const auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  for (const std::string_view library : kSignalTakingLibraries) {
    if (name.substr(0, library.size()) == library) return true;
  }
  return false;
}

bool handler_lies_in_signal_taking_library(const struct sigaction& action) {
  // sa_handler and sa_sigaction share storage: either way the address of
  // the code the kernel will jump to.
  const void* code = (action.sa_flags & SA_SIGINFO) != 0 ? reinterpret_cast<const void*>(action.sa_sigaction)
                                                         : reinterpret_cast<const void*>(action.sa_handler);
  if (code == reinterpret_cast<const void*>(SIG_DFL) || code == reinterpret_cast<const void*>(SIG_IGN)) return false;
  Dl_info where{};
  return ::dladdr(code, &where) != 0 && is_signal_taking_library(where.dli_fname);
}

// Signal numbers 1 to 31: the standard signals. The real-time ones are
// nobody's crash or stop signals.
constexpr int kLastStandardSignal = 31;

// At load: the loader runs this after the constructors of the libraries
// murmur's fabric library depends on, libfabric's and theirs included.
[[gnu::constructor]] void release_at_load() { release_signals_held_by_provider_libraries(); }

}  // namespace

std::vector<int> signals_held_by_provider_libraries() {
  std::vector<int> held;
  for (int signo = 1; signo <= kLastStandardSignal; ++signo) {
    struct sigaction action {};
    if (::sigaction(signo, nullptr, &action) != 0) continue;
    if (handler_lies_in_signal_taking_library(action)) held.push_back(signo);
  }
  return held;
}

std::vector<int> release_signals_held_by_provider_libraries() {
  std::vector<int> released;
  for (const int signo : signals_held_by_provider_libraries()) {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    struct sigaction replaced {};
    if (::sigaction(signo, &default_action, &replaced) != 0) continue;
    if (!handler_lies_in_signal_taking_library(replaced)) {
      // Another thread installed its own in between: that one stays.
      ::sigaction(signo, &replaced, nullptr);
      continue;
    }
    released.push_back(signo);
  }
  return released;
}

}  // namespace murmur::fabric::libfabric
